"""A service's CloudWatch dashboard of the decisions the reliability layer emits, with the alarms on
the ones a human must act on.

`reliability.telemetry` counts every decision in a metric named after it, in the service's
namespace with dimensions `service` and `step` (the route, saga step or consumer); `PANELS` groups
the `Decision` members themselves, and a test pins that every one has a widget. Widgets use SEARCH
over the `step` dimension, so a new step or consumer shows up without a change here; the alarms sum
a decision over every step with a Metrics Insights query, for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from reliability.telemetry import Decision

PERIOD = Duration.minutes(5)
# More takeovers than this in PERIOD means attempts keep dying while holding fences (crashes,
# timeouts): a few are AWS retrying normally, a stream of them is something to look at.
TAKEOVERS_PER_PERIOD = 5


@dataclass(frozen=True)
class Panel:
    title: str
    decisions: tuple[Decision, ...]


# Every decision, on the panel an operator looks for it on.
PANELS: tuple[Panel, ...] = (
    Panel("Requests: executed (fresh) vs replayed", (Decision.EXECUTED, Decision.REPLAYED)),
    Panel(
        "Requests refused: 409 in progress, 422 key reused, 400 key rejected",
        (Decision.IN_PROGRESS_CONFLICT, Decision.PAYLOAD_MISMATCH, Decision.KEY_REJECTED),
    ),
    Panel("Deliveries per consumer: applied (fresh) vs dedup hit", (Decision.DEDUP_MISS, Decision.DEDUP_HIT)),
    Panel(
        "Fences per step: skipped (replayed), takeovers, stale completions",
        (Decision.FENCE_SKIPPED, Decision.FENCE_TAKEOVER, Decision.FENCE_STALE),
    ),
    Panel(
        "Fences per step: claimed, completed, busy, failed, released",
        (
            Decision.FENCE_CLAIMED,
            Decision.FENCE_COMPLETED,
            Decision.FENCE_BUSY,
            Decision.FENCE_FAILED,
            Decision.FENCE_RELEASED,
        ),
    ),
    Panel("Poison messages and retries", (Decision.POISON, Decision.RETRY)),
    Panel(
        "Stranded business items: ACCEPTED too long, message re-sent by the sweeper",
        (Decision.STRANDED_RUN,),
    ),
    Panel("Express executions the worker waited for: ended (any status)", (Decision.EXECUTION_ENDED,)),
)


def decision_metrics() -> list[str]:
    """The metric names the panels show, in order."""
    return [decision.value for panel in PANELS for decision in panel.decisions]


class DecisionDashboard(Construct):
    """`dashboard`: the decision panels, the depths of `dlqs` (label -> queue), the executions
    started, failed and redriven; `stale_alarm` on any stale completion and `takeover_alarm` on
    takeovers above TAKEOVERS_PER_PERIOD, over every step and consumer of the service."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dashboard_name: str,
        namespace: str,
        service: str,
        state_machine: sfn.IStateMachine,
        dlqs: Mapping[str, sqs.IQueue],
        stale_alarm_description: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.namespace, self.service = namespace, service
        widgets: list[cloudwatch.IWidget] = [self._panel(panel) for panel in PANELS]
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
            alarm_description=stale_alarm_description
            or (
                "An attempt tried to complete a step after its fence had moved on (a zombie was "
                "stopped). Rare: find its run by the FenceStale log line's token and read its story."
            ),
            metric=self._sum(Decision.FENCE_STALE),
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
            metric=self._sum(Decision.FENCE_TAKEOVER),
            threshold=TAKEOVERS_PER_PERIOD,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _search(self, decision: Decision) -> cloudwatch.MathExpression:
        return cloudwatch.MathExpression(
            expression=(
                f'SEARCH(\'{{{self.namespace},service,step}} MetricName="{decision.value}" '
                f"service=\"{self.service}\"', 'Sum', {int(PERIOD.to_seconds())})"
            ),
            using_metrics={},
            label=decision.value,
            period=PERIOD,
        )

    def _panel(self, panel: Panel) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title=panel.title, left=[self._search(name) for name in panel.decisions], width=12, stacked=False
        )

    def _sum(self, decision: Decision) -> cloudwatch.MathExpression:
        """One decision summed over every step and consumer of the service: a Metrics Insights
        query, since a math expression alarm takes at most 10 metrics and alarms cannot SEARCH."""
        # A CloudWatch query of names from the stage config, not SQL on a database
        query = f'SELECT SUM("{decision.value}") FROM SCHEMA("{self.namespace}", service, step) '  # noqa: S608
        query += f"WHERE service = '{self.service}'"
        return cloudwatch.MathExpression(
            expression=query,
            using_metrics={},
            period=PERIOD,
        )
