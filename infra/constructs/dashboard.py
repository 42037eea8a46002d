"""The service's CloudWatch dashboard and the alarms where a human must act, built from the list
of decisions the reliability layer emits.

`reliability.telemetry` counts every decision in a metric named after it, in the service's
namespace with dimensions `service` and `step` (the route, saga step or consumer). infra never
imports functions/, so the decision names are written here once more, in `PANELS`; a test pins
that every `reliability.telemetry.Decision` has a widget and every widget names a decision.
Widgets use SEARCH over the `step` dimension, so a new step or consumer shows up without a change
here; the alarms sum a decision over every step with a Metrics Insights query, for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import STRANDED_AFTER_MINUTES

PERIOD = Duration.minutes(5)
# More takeovers than this in PERIOD means attempts keep dying while holding fences (crashes,
# timeouts): a few are AWS retrying normally, a stream of them is something to look at.
TAKEOVERS_PER_PERIOD = 5
# An accepted order's message waits at most a few worker timeouts; this long in the orders queue
# means the worker is not starting workflows.
ACCEPTED_TOO_LONG = Duration.minutes(STRANDED_AFTER_MINUTES)


@dataclass(frozen=True)
class Panel:
    title: str
    decisions: tuple[str, ...]  # reliability.telemetry.Decision values (metric names)


# Every decision, on the panel an operator looks for it on.
PANELS: tuple[Panel, ...] = (
    Panel("Requests: executed (fresh) vs replayed", ("Executed", "Replayed")),
    Panel(
        "Requests refused: 409 in progress, 422 key reused, 400 key rejected",
        ("InProgressConflict", "PayloadMismatch", "IdempotencyKeyRejected"),
    ),
    Panel("Deliveries per consumer: applied (fresh) vs dedup hit", ("DedupMiss", "DedupHit")),
    Panel(
        "Fences per step: skipped (replayed), takeovers, stale completions",
        ("FenceSkipped", "FenceTakeover", "FenceStale"),
    ),
    Panel(
        "Fences per step: claimed, completed, busy, failed, released",
        ("FenceClaimed", "FenceCompleted", "FenceBusy", "FenceFailed", "FenceReleased"),
    ),
    Panel("Poison messages and retries", ("PoisonMessage", "Retry")),
    Panel("Stranded orders: ACCEPTED too long, message re-sent by the sweeper", ("StrandedOrders",)),
    Panel("Express executions the worker waited for: ended (any status)", ("ExecutionEnded",)),
)


def decision_metrics() -> list[str]:
    return [name for panel in PANELS for name in panel.decisions]


class ServiceDashboard(Construct):
    """Decision panels, DLQ depths, executions failed and redriven; alarms on stale completions,
    takeovers above a rate, accepted orders waiting too long, and stranded orders re-sent."""

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
        super().__init__(scope, construct_id)
        self.namespace, self.service = namespace, service
        widgets: list[cloudwatch.IWidget] = [self._panel(panel) for panel in PANELS]
        dlqs = {name: q for name, q in queues.items() if name.endswith("-dlq")}
        widgets.append(
            cloudwatch.GraphWidget(
                title="DLQ depths",
                left=[
                    q.metric_approximate_number_of_messages_visible(
                        label=name, period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM
                    )
                    for name, q in dlqs.items()
                ],
                width=12,
            )
        )
        widgets.append(
            cloudwatch.GraphWidget(
                title="Executions: started, succeeded, failed, redriven",
                left=[
                    state_machine.metric_started(period=PERIOD, label="started"),
                    state_machine.metric_succeeded(period=PERIOD, label="succeeded"),
                    state_machine.metric_failed(period=PERIOD, label="failed"),
                    state_machine.metric_timed_out(period=PERIOD, label="timed out"),
                    state_machine.metric_aborted(period=PERIOD, label="aborted"),
                    state_machine.metric(
                        "ExecutionsRedriven", period=PERIOD, statistic="Sum", label="redriven"
                    ),
                ],
                width=12,
            )
        )
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        for row in range(0, len(widgets), 2):
            self.dashboard.add_widgets(*widgets[row : row + 2])

        self.stale_alarm = cloudwatch.Alarm(
            self,
            "StaleCompletion",
            alarm_name=f"{dashboard_name}-stale-completion",
            alarm_description=(
                "An attempt tried to complete a step after its fence had moved on (a zombie was "
                "stopped). Rare: find the order by the FenceStale log line's order_id and read "
                "`make story ORDER=<id>`."
            ),
            metric=self._sum("FenceStale"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.takeover_alarm = cloudwatch.Alarm(
            self,
            "Takeovers",
            alarm_name=f"{dashboard_name}-takeovers",
            alarm_description=(
                f"More than {TAKEOVERS_PER_PERIOD} fence takeovers in {PERIOD.to_minutes()} minutes: "
                "attempts keep dying while holding a step (crashes, timeouts)."
            ),
            metric=self._sum("FenceTakeover"),
            threshold=TAKEOVERS_PER_PERIOD,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
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
                namespace=self.namespace,
                metric_name="StrandedOrders",
                dimensions_map={"service": self.service, "step": sweeper_step},
                statistic="Sum",
                period=PERIOD,
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _search(self, decision: str) -> cloudwatch.MathExpression:
        return cloudwatch.MathExpression(
            expression=(
                f'SEARCH(\'{{{self.namespace},service,step}} MetricName="{decision}" '
                f"service=\"{self.service}\"', 'Sum', {int(PERIOD.to_seconds())})"
            ),
            using_metrics={},
            label=decision,
            period=PERIOD,
        )

    def _panel(self, panel: Panel) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title=panel.title, left=[self._search(name) for name in panel.decisions], width=12, stacked=False
        )

    def _sum(self, decision: str) -> cloudwatch.MathExpression:
        """One decision summed over every step and consumer of the service: a Metrics Insights
        query, since a math expression alarm takes at most 10 metrics and alarms cannot SEARCH."""
        # A CloudWatch query of names from the stage config, not SQL on a database
        query = f'SELECT SUM("{decision}") FROM SCHEMA("{self.namespace}", service, step) '  # noqa: S608
        query += f"WHERE service = '{self.service}'"
        return cloudwatch.MathExpression(
            expression=query,
            using_metrics={},
            period=PERIOD,
        )
