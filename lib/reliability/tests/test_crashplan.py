"""The crash plan: read from the environment, a shared plan's per-function views, hits counted in a
state dir, the exit mode, and AWS failures injected as botocore raises them."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from reliability.faults import crash_point
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_helpers import FENCES, REGION

POINTS = "RETRYSAFE_CRASH_POINTS"


# --- from_env: mode, state dir, scope ----------------------------------------------------------


def test_a_plan_from_the_environment_exits_by_default() -> None:
    plan = CrashPlan.from_env({POINTS: "p"})
    assert plan is not None
    assert (plan.points, plan.mode, plan.state_dir) == ({"p": 1}, "exit", None)


@pytest.mark.parametrize(("mode", "expected"), [("exit", "exit"), ("raise", "raise")])
def test_a_plan_from_the_environment_keeps_the_mode_it_names(mode: str, expected: str) -> None:
    plan = CrashPlan.from_env({POINTS: "p", "RETRYSAFE_CRASH_MODE": mode})
    assert plan is not None
    assert plan.mode == expected


def test_a_plan_from_the_environment_counts_hits_in_its_state_dir(tmp_path: Path) -> None:
    hits = str(tmp_path / "hits")
    env = {POINTS: "p=1", "RETRYSAFE_CRASH_MODE": "raise", "RETRYSAFE_CRASH_STATE_DIR": hits}
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert plan.state_dir == hits
    # A hit takes a marker in the directory, so a second plan read from the same environment
    # (another process) finds the one hit spent
    with pytest.raises(SimulatedCrash):
        plan.hit("p")
    assert len(list((tmp_path / "hits").iterdir())) == 1
    again = CrashPlan.from_env(env)
    assert again is not None
    again.hit("p")


def test_an_empty_state_dir_counts_in_memory() -> None:
    plan = CrashPlan.from_env({POINTS: "p", "RETRYSAFE_CRASH_STATE_DIR": ""})
    assert plan is not None
    assert plan.state_dir is None


def test_the_crash_scope_variable_names_the_function() -> None:
    # Given entries scoped to "pay" and the scope variable naming it (no Lambda function name)
    env = {POINTS: "a@pay=2,b@audit", "RETRYSAFE_CRASH_SCOPE": "svc-dev-pay"}
    plan = CrashPlan.from_env(env)
    # Then the plan arms the entry of that function only
    assert plan is not None
    assert plan.points == {"a": 2}


def test_the_crash_scope_variable_wins_over_the_lambda_function_name() -> None:
    env = {
        POINTS: "a@pay,b@audit",
        "RETRYSAFE_CRASH_SCOPE": "pay",
        "AWS_LAMBDA_FUNCTION_NAME": "svc-dev-audit",
    }
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert plan.points == {"a": 1}


def test_an_empty_function_name_arms_no_scoped_entry() -> None:
    env = {POINTS: "a@pay,b", "AWS_LAMBDA_FUNCTION_NAME": ""}
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert (plan.points, plan.scoped) == ({"b": 1}, ())


# --- armed ------------------------------------------------------------------------------------


def test_armed_tells_the_points_of_the_plan() -> None:
    plan = CrashPlan.parse("p=2,after:SQS.SendMessage")
    assert [plan.armed(p) for p in ("p", "after:SQS.SendMessage", "q", "")] == [True, True, False, False]


# --- for_function: the view of a shared plan ----------------------------------------------------


def test_a_function_view_keeps_the_plans_mode_and_state_dir(tmp_path: Path) -> None:
    plan = CrashPlan.parse("x@pay", mode="exit", state_dir=str(tmp_path))
    view = plan.for_function("svc-pay")
    assert (view.points, view.mode, view.state_dir) == ({"x": 1}, "exit", str(tmp_path))


def test_a_function_view_counts_its_hits_in_the_plans_state_dir(tmp_path: Path) -> None:
    # Given a shared plan with a state dir and an entry scoped to one function
    plan = CrashPlan.parse("x@pay=1", mode="raise", state_dir=str(tmp_path))
    # When that function's view crashes at the point
    with pytest.raises(SimulatedCrash, match="simulated crash at x"):
        crash_point("x", plan.for_function("svc-pay"))
    # Then the hit is a marker in the state dir, which a later view (another worker) sees spent
    assert len(list(tmp_path.iterdir())) == 1
    later = CrashPlan.parse("x@pay=1", mode="raise", state_dir=str(tmp_path))
    crash_point("x", later.for_function("svc-pay"))


def test_no_function_arms_no_scoped_entry() -> None:
    plan = CrashPlan.parse("x@pay,y", mode="raise")
    for name in (None, ""):
        view = plan.for_function(name)
        assert view.points == {"y": 1}
        crash_point("x", view)


def test_a_function_view_counts_under_the_plans_lock() -> None:
    # Given a shared plan whose count is being taken (its lock held, as by another function's hit)
    plan = CrashPlan.parse("x@pay=1", mode="raise")
    view = plan.for_function("svc-pay")
    outcome: list[str] = []
    done = threading.Event()

    def hit() -> None:
        try:
            view.hit("x")
            outcome.append("passed")
        except SimulatedCrash:
            outcome.append("crashed")
        done.set()

    with plan._lock:
        thread = threading.Thread(target=hit)
        thread.start()
        # Then a hit through the function's view waits for it
        assert not done.wait(0.2)
    thread.join(5)
    assert outcome == ["crashed"]


# --- hits counted in a state dir ------------------------------------------------------------------


def test_a_state_dir_lets_exactly_n_hits_crash_across_plans(tmp_path: Path) -> None:
    # Given three processes' plans sharing one state dir, the point armed for 2 hits
    plans = [CrashPlan.parse("p=2", mode="raise", state_dir=str(tmp_path)) for _ in range(3)]
    # When each reaches the point once, Then the first two crash and the third passes
    for plan in plans[:2]:
        with pytest.raises(SimulatedCrash):
            plan.hit("p")
    plans[2].hit("p")
    # And each hit is a private marker file that names its point
    markers = sorted(tmp_path.iterdir())
    assert [m.read_text() for m in markers] == ["p", "p"]
    assert [m.stat().st_mode & 0o777 for m in markers] == [0o600, 0o600]


def test_each_point_counts_its_own_hits_in_a_shared_state_dir(tmp_path: Path) -> None:
    plan = CrashPlan.parse("a,b", mode="raise", state_dir=str(tmp_path))
    for point in ("a", "b"):
        with pytest.raises(SimulatedCrash, match=f"simulated crash at {point}$"):
            plan.hit(point)
    plan.hit("a")
    plan.hit("b")
    assert sorted(m.read_text() for m in tmp_path.iterdir()) == ["a", "b"]


def test_an_unarmed_point_touches_no_state_dir(tmp_path: Path) -> None:
    plan = CrashPlan.parse("p", mode="raise", state_dir=str(tmp_path / "hits"))
    plan.hit("q")
    assert not (tmp_path / "hits").exists()


def test_a_point_armed_for_no_hits_never_crashes(tmp_path: Path) -> None:
    for state_dir in (None, str(tmp_path)):
        plan = CrashPlan.parse("p=0", mode="raise", state_dir=state_dir)
        assert plan.armed("p")
        plan.hit("p")
    assert list(tmp_path.iterdir()) == []


# --- the exit mode ------------------------------------------------------------------------------


class Exited(BaseException):
    """What the stand-in for os._exit raises, so the test process lives on."""


def test_the_exit_mode_says_where_and_exits_137(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    codes: list[int] = []

    def exit_(code: int) -> None:
        codes.append(code)
        raise Exited

    monkeypatch.setattr(os, "_exit", exit_)
    plan = CrashPlan.parse("fence:after-effect:Pay", mode="exit")
    with pytest.raises(Exited):
        plan.hit("fence:after-effect:Pay")
    assert codes == [137]
    assert capsys.readouterr().err == "retrysafe: simulated crash at fence:after-effect:Pay\n"
    plan.hit("fence:after-effect:Pay")  # its one hit is spent
    assert codes == [137]


# --- injected AWS failures, as botocore raises them ----------------------------------------------


def test_an_injected_client_error_reads_as_botocores(aws: None) -> None:
    sqs = CrashPlan.parse("error:SQS.SendMessage:ServiceUnavailable", mode="raise").instrument(
        boto3.client("sqs", region_name=REGION)
    )
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    with pytest.raises(ClientError) as raised:
        sqs.send_message(QueueUrl=url, MessageBody="x")
    assert raised.value.response == {
        "Error": {"Code": "ServiceUnavailable", "Message": "injected ServiceUnavailable (503)"},
        "ResponseMetadata": {"HTTPStatusCode": 503, "HTTPHeaders": {}, "RetryAttempts": 0},
    }
    assert raised.value.operation_name == "SendMessage"
    assert str(raised.value) == (
        "An error occurred (ServiceUnavailable) when calling the SendMessage operation: "
        "injected ServiceUnavailable (503)"
    )


@pytest.mark.parametrize("when", ["error", "error-after"])
def test_an_injected_transport_failure_names_the_clients_endpoint(ddb: Any, when: str) -> None:
    CrashPlan.parse(f"{when}:DynamoDB.PutItem:ConnectionClosed", mode="raise").instrument(ddb)
    with pytest.raises(ConnectionClosedError) as raised:
        ddb.put_item(TableName=FENCES, Item={"id": {"S": "k"}})
    endpoint = ddb.meta.endpoint_url
    assert raised.value.kwargs == {"endpoint_url": endpoint, "error": "injected ConnectionClosed"}
    assert endpoint in str(raised.value)


def test_an_error_after_point_can_answer_a_modeled_client_error(ddb: Any) -> None:
    CrashPlan.parse("error-after:DynamoDB.PutItem:InternalServerError", mode="raise").instrument(ddb)
    item = {"id": {"S": "written"}}
    with pytest.raises(ddb.exceptions.InternalServerError) as raised:
        ddb.put_item(TableName=FENCES, Item=item)
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert ddb.get_item(TableName=FENCES, Key=item)["Item"] == item  # the write happened


def test_a_plan_of_after_points_only_hooks_the_client(ddb: Any) -> None:
    CrashPlan.parse("after:DynamoDB.PutItem", mode="raise").instrument(ddb)
    with pytest.raises(SimulatedCrash, match=r"after:DynamoDB\.PutItem"):
        ddb.put_item(TableName=FENCES, Item={"id": {"S": "k"}})


def test_two_plans_hook_the_same_client(ddb: Any) -> None:
    # Given one client instrumented by two plans (a test's and a function's own)
    key = {"id": {"S": "k"}}
    CrashPlan.parse("after:DynamoDB.PutItem=1", mode="raise").instrument(ddb)
    CrashPlan.parse("before:DynamoDB.GetItem=1,after:DynamoDB.DeleteItem=1", mode="raise").instrument(ddb)
    # Then the points of both fire, before and after their calls
    with pytest.raises(SimulatedCrash, match=r"after:DynamoDB\.PutItem"):
        ddb.put_item(TableName=FENCES, Item=key)
    with pytest.raises(SimulatedCrash, match=r"before:DynamoDB\.GetItem"):
        ddb.get_item(TableName=FENCES, Key=key)
    with pytest.raises(SimulatedCrash, match=r"after:DynamoDB\.DeleteItem"):
        ddb.delete_item(TableName=FENCES, Key=key)


def test_a_spec_skips_blank_entries_and_trims_each() -> None:
    plan = CrashPlan.parse(" p ,, q=2 , ,after:SQS.SendMessage @pay=3,", function_name="svc-pay")
    assert plan.points == {"p": 1, "q": 2, "after:SQS.SendMessage": 3}
