"""The dashboard shows every decision the reliability layer emits, and nothing it does not; the
alarms a human must act on exist."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.config import SWEEP_EVERY_MINUTES
from orders import workflow
from orders.handlers.sweep import STEP as SWEEP_STEP
from reliability.cdk.dashboard import PANELS, decision_metrics
from reliability.telemetry import Decision
from tests.infra.conftest import stack

EMITTED = {decision.value for decision in Decision}


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def app() -> dict[str, Any]:
    return stack("dev", "app")


@pytest.fixture(scope="module")
def body(app: dict[str, Any]) -> str:
    (dashboard,) = _resources(app, "AWS::CloudWatch::Dashboard").values()
    return json.dumps(dashboard["Properties"]["DashboardBody"])


def test_every_decision_the_telemetry_emits_has_a_widget_and_no_widget_names_another(body: str):
    shown = set(re.findall(r'MetricName=\\\\\\"(\w+)\\\\\\"', body))
    assert shown == EMITTED
    assert sorted(decision_metrics()) == sorted(EMITTED)  # each once, on one panel
    for panel in PANELS:
        assert panel.title in body


def test_the_decision_widgets_read_the_services_namespace_and_dimensions(body: str):
    assert body.count("SEARCH('{retrysafe,service,step} MetricName=") == len(EMITTED)
    assert body.count('service=\\\\\\"retrysafe\\\\\\"') == len(EMITTED)


def test_dlq_depths_and_executions_failed_and_redriven_are_shown(body: str):
    for dlq in ("orders-dlq", *(f"{consumer.name}-dlq" for consumer in workflow.CONSUMERS)):
        assert f'\\"label\\":\\"{dlq}\\"' in body
    for metric in ("ExecutionsFailed", "ExecutionsRedriven", "ExecutionsSucceeded"):
        assert metric in body


def _alarm(app: dict[str, Any], suffix: str) -> dict[str, Any]:
    (alarm,) = [
        a["Properties"]
        for a in _resources(app, "AWS::CloudWatch::Alarm").values()
        if str(a["Properties"].get("AlarmName", "")).endswith(suffix)
    ]
    return alarm


@pytest.mark.parametrize(
    ("suffix", "decision", "threshold"),
    [("stale-completion", "FenceStale", 1), ("takeovers", "FenceTakeover", 5)],
)
def test_stale_completions_and_takeovers_alarm_over_every_fenced_step_and_consumer(
    app, suffix, decision, threshold
):
    alarm = _alarm(app, suffix)
    assert alarm["Threshold"] == threshold
    # One Metrics Insights query over every step: a new step or consumer needs no change here,
    # and there is no 10-metric ceiling (a math expression alarm's)
    (query,) = alarm["Metrics"]
    assert query["Expression"] == (
        f'SELECT SUM("{decision}") FROM SCHEMA("retrysafe", service, step) WHERE service = \'retrysafe\''
    )
    assert query["Period"] == 300
    assert query["ReturnData"] is True


def test_an_order_accepted_too_long_alarms(app):
    alarm = _alarm(app, "orders-accepted-too-long")
    assert alarm["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert alarm["Threshold"] == 900


def test_a_stranded_order_resent_by_the_sweeper_alarms(app):
    alarm = _alarm(app, "stranded-orders")
    assert (alarm["MetricName"], alarm["Threshold"]) == ("StrandedRun", 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    assert dimensions == {"service": "retrysafe", "step": SWEEP_STEP}


def test_the_sweeper_runs_on_a_schedule(app):
    (rule,) = _resources(app, "AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == f"rate({SWEEP_EVERY_MINUTES} minutes)"
    (target,) = rule["Properties"]["Targets"]
    (sweeper,) = [
        logical_id
        for logical_id, fn in _resources(app, "AWS::Lambda::Function").items()
        if fn["Properties"]["Handler"] == "orders.handlers.sweep.handler"
    ]
    assert target["Arn"] == {"Fn::GetAtt": [sweeper, "Arn"]}
