"""The service's dashboard: the library's decision dashboard (reliability.cdk.dashboard) and the
alarms on the service's own queue and sweeper."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import STRANDED_AFTER_MINUTES
from reliability.cdk.dashboard import PERIOD, DecisionDashboard
from reliability.telemetry import Decision

# An accepted order's message waits at most a few worker timeouts; this long in the orders queue
# means the worker is not starting workflows.
ACCEPTED_TOO_LONG = Duration.minutes(STRANDED_AFTER_MINUTES)


class ServiceDashboard(DecisionDashboard):
    """The decision dashboard, plus alarms on accepted orders waiting too long and on stranded
    orders re-sent by the sweeper."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dashboard_name: str,
        namespace: str,
        service: str,
        sweeper_step: str,
        state_machine: sfn.IStateMachine,
        queues: Mapping[str, sqs.IQueue],
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            dashboard_name=dashboard_name,
            namespace=namespace,
            service=service,
            state_machine=state_machine,
            dlqs={name: q for name, q in queues.items() if name.endswith("-dlq")},
            stale_alarm_description=(
                "An attempt tried to complete a step after its fence had moved on (a zombie was "
                "stopped). Rare: find the order by the FenceStale log line's order_id and read "
                "`make story ORDER=<id>`."
            ),
        )
        orders = queues["orders"]
        self.accepted_alarm = cloudwatch.Alarm(
            self,
            "AcceptedTooLong",
            alarm_name=f"{dashboard_name}-orders-accepted-too-long",
            alarm_description=(
                f"An accepted order's message has waited over {ACCEPTED_TOO_LONG.to_minutes()} minutes "
                "for the worker: its workflow has not started."
            ),
            metric=orders.metric_approximate_age_of_oldest_message(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=ACCEPTED_TOO_LONG.to_seconds(),
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

        self.stranded_alarm = cloudwatch.Alarm(
            self,
            "StrandedOrders",
            alarm_name=f"{dashboard_name}-stranded-orders",
            alarm_description=(
                f"The sweeper re-sent the message of an order ACCEPTED over {STRANDED_AFTER_MINUTES} "
                "minutes ago (the API died before the send and the client never retried). The order "
                "heals itself; find it by the StrandedOrders log line's order_id and check it completed."
            ),
            metric=cloudwatch.Metric(
                namespace=namespace,
                metric_name=Decision.STRANDED_ORDER.value,
                dimensions_map={"service": service, "step": sweeper_step},
                statistic="Sum",
                period=PERIOD,
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
