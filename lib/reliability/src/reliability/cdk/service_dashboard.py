"""A service's dashboard: the decision dashboard (reliability.cdk.dashboard) and the alarms on the
worker's queue and the sweeper of stranded runs."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from reliability.cdk.dashboard import PERIOD, DecisionDashboard
from reliability.cdk.declared import pascal
from reliability.cdk.sizing import plural
from reliability.declaration import Service
from reliability.telemetry import ENTITY_KEY, Decision


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


class ServiceDashboard(DecisionDashboard):
    """The decision dashboard, plus alarms on accepted runs waiting too long in the worker's queue
    and on stranded entities re-sent by the sweeper (`sweeper_step`, its metrics' step)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: Service,
        dashboard_name: str,
        namespace: str,
        service_name: str,
        sweeper_step: str,
        stranded_after_minutes: int,
        state_machine: sfn.IStateMachine,
        queues: Mapping[str, sqs.IQueue],
    ) -> None:
        entity, entities = service.entity.name, plural(service)
        super().__init__(
            scope,
            construct_id,
            dashboard_name=dashboard_name,
            namespace=namespace,
            service=service_name,
            state_machine=state_machine,
            dlqs={name: q for name, q in queues.items() if name.endswith("-dlq")},
            stale_alarm_description=(
                "An attempt tried to complete a step after its fence had moved on (a zombie was "
                f"stopped). Rare: find the {entity} by the {Decision.FENCE_STALE.value} log line's "
                f"{ENTITY_KEY} and read `make story {entity.upper()}=<id>`."
            ),
        )
        # An accepted run's message waits at most a few worker timeouts; this long in the worker's
        # queue means the worker is not starting workflows.
        accepted_too_long = Duration.minutes(stranded_after_minutes)
        self.accepted_alarm = cloudwatch.Alarm(
            self,
            "AcceptedTooLong",
            alarm_name=f"{dashboard_name}-{entities}-accepted-too-long",
            alarm_description=(
                f"An accepted {entity}'s message has waited over {accepted_too_long.to_minutes()} minutes "
                "for the worker: its workflow has not started."
            ),
            metric=queues[service.queue].metric_approximate_age_of_oldest_message(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=accepted_too_long.to_seconds(),
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        stranded = Decision.STRANDED_RUN.value
        self.stranded_alarm = cloudwatch.Alarm(
            self,
            f"Stranded{pascal(entities)}",
            alarm_name=f"{dashboard_name}-stranded-{entities}",
            alarm_description=(
                f"The sweeper re-sent the message of {_a(entity)} ACCEPTED over {stranded_after_minutes} "
                f"minutes ago (the API died before the send and the client never retried). The {entity} "
                f"heals itself; find it by the {stranded} log line's {ENTITY_KEY} and check it completed."
            ),
            metric=cloudwatch.Metric(
                namespace=namespace,
                metric_name=stranded,
                dimensions_map={"service": service_name, "step": sweeper_step},
                statistic="Sum",
                period=PERIOD,
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
