"""The hook points production code calls: the cold-start plan from the environment, and the
defaults crash_point and instrument fall back to."""

from __future__ import annotations

import sys

import boto3
import pytest

from reliability import faults
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_helpers import REGION

SEAM = "reliability.testing.crashplan"


@pytest.fixture
def unloaded_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """The crash plan's module as a cold start without the variable finds it: not loaded."""
    import reliability.testing as testing  # noqa: PLC0415 - the package whose attribute is restored

    monkeypatch.delitem(sys.modules, SEAM, raising=False)
    monkeypatch.delattr(testing, "crashplan", raising=False)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_cold_start_without_points_has_no_plan_and_loads_no_seam(
    monkeypatch: pytest.MonkeyPatch, unloaded_seam: None, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("RETRYSAFE_CRASH_POINTS", raising=False)
    else:
        monkeypatch.setenv("RETRYSAFE_CRASH_POINTS", value)
    assert faults._plan_from_env() is None
    assert SEAM not in sys.modules


def test_a_cold_start_with_points_parses_its_plan_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RETRYSAFE_CRASH_POINTS", " fence:after-effect:Pay@pay=2 ")
    monkeypatch.setenv("RETRYSAFE_CRASH_MODE", "raise")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "svc-dev-pay")
    monkeypatch.delenv("RETRYSAFE_CRASH_SCOPE", raising=False)
    monkeypatch.delenv("RETRYSAFE_CRASH_STATE_DIR", raising=False)
    plan = faults._plan_from_env()
    assert isinstance(plan, CrashPlan)
    assert (plan.points, plan.mode, plan.state_dir) == ({"fence:after-effect:Pay": 2}, "raise", None)


# --- the cold-start plan as the hook points' default ---------------------------------------------


@pytest.fixture
def cold_start_plan(monkeypatch: pytest.MonkeyPatch) -> CrashPlan:
    """The plan a process started with RETRYSAFE_CRASH_POINTS set holds (faults._PLAN)."""
    plan = CrashPlan.parse("cold=1,before:SQS.GetQueueUrl=1", mode="raise")
    monkeypatch.setattr(faults, "_PLAN", plan)
    return plan


def test_without_a_cold_start_plan_the_hook_points_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "_PLAN", None)
    assert faults.active_plan() is None
    faults.crash_point("cold")
    client = object()
    assert faults.instrument(client) is client


def test_a_crash_point_without_a_plan_uses_the_cold_start_plan(cold_start_plan: CrashPlan) -> None:
    assert faults.active_plan() is cold_start_plan
    with pytest.raises(SimulatedCrash) as crash:
        faults.crash_point("cold")
    assert crash.value.point == "cold"
    faults.crash_point("cold")  # its one hit is spent


def test_a_crash_point_given_a_plan_uses_that_plan(cold_start_plan: CrashPlan) -> None:
    given = CrashPlan.parse("given=1", mode="raise")
    with pytest.raises(SimulatedCrash) as crash:
        faults.crash_point("given", given)
    assert crash.value.point == "given"
    faults.crash_point("cold", given)  # not armed in the given plan
    assert cold_start_plan._memory == {}


def test_instrument_without_a_plan_hooks_the_cold_start_plan(cold_start_plan: CrashPlan) -> None:
    client = boto3.client("sqs", region_name=REGION)
    assert faults.instrument(client) is client
    with pytest.raises(SimulatedCrash, match=r"before:SQS\.GetQueueUrl"):
        client.get_queue_url(QueueName="q")


def test_instrument_given_a_plan_hooks_that_plan(aws: None, cold_start_plan: CrashPlan) -> None:
    client = boto3.client("sqs", region_name=REGION)
    url = client.create_queue(QueueName="q")["QueueUrl"]
    given = CrashPlan.parse("before:SQS.ListQueues=1", mode="raise")
    assert faults.instrument(client, given) is client
    # Then the given plan's point fires, and the cold-start plan's point is not hooked
    with pytest.raises(SimulatedCrash, match=r"before:SQS\.ListQueues"):
        client.list_queues()
    assert client.get_queue_url(QueueName="q")["QueueUrl"] == url
