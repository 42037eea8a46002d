"""Crash plans: parsing, scoping, hit counting across processes, botocore hooks, both modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from reliability.faults import crash_point, instrument
from reliability.testing.crashpoints import EXIT_CODE, TRANSPORT_ERRORS, CrashPlan, SimulatedCrash
from reliability_helpers import FENCES, aws_client


def test_off_unless_the_variable_is_set() -> None:
    assert CrashPlan.from_env({}) is None
    assert CrashPlan.from_env({"RETRYSAFE_CRASH_POINTS": "  "}) is None
    # And with no plan, a crash point and instrument do nothing
    crash_point("fence:after-effect:anything")
    client = object()
    assert instrument(client) is client


def test_parse_entries_hits_and_scope() -> None:
    spec = ",".join(
        [
            "after:DynamoDB.TransactWriteItems@pay=2",
            "fence:after-effect:x",
            "before:SQS.SendMessage@announce",
        ]
    )
    plan = CrashPlan.from_env(
        {
            "RETRYSAFE_CRASH_POINTS": spec,
            "RETRYSAFE_CRASH_MODE": "raise",
            "AWS_LAMBDA_FUNCTION_NAME": "retrysafe-local-pay",
        }
    )
    assert plan is not None
    assert plan.points == {"after:DynamoDB.TransactWriteItems": 2, "fence:after-effect:x": 1}
    assert plan.mode == "raise"


def test_a_plan_scoped_to_other_functions_is_off() -> None:
    env = {
        "RETRYSAFE_CRASH_POINTS": "fence:after-effect:x@announce",
        "AWS_LAMBDA_FUNCTION_NAME": "svc-dev-audit",
    }
    assert CrashPlan.from_env(env) is None


@pytest.mark.parametrize(
    "env",
    [
        {"RETRYSAFE_CRASH_POINTS": "a=b=c"},
        {"RETRYSAFE_CRASH_POINTS": "x", "RETRYSAFE_CRASH_MODE": "explode"},
    ],
)
def test_bad_specs_fail_loudly(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"(?i)crash"):
        CrashPlan.from_env(env)


def test_a_point_crashes_exactly_n_times_in_memory() -> None:
    plan = CrashPlan.parse("p=2", mode="raise")
    for _ in range(2):
        with pytest.raises(SimulatedCrash):
            crash_point("p", plan)
    crash_point("p", plan)  # the third hit passes
    crash_point("unarmed", plan)


def test_simulated_crash_escapes_except_exception() -> None:
    plan = CrashPlan.parse("p", mode="raise")

    def swallowing() -> None:
        try:
            plan.hit("p")
        except Exception:
            pytest.fail("SimulatedCrash must not be an Exception")

    with pytest.raises(SimulatedCrash):
        swallowing()


def test_hits_are_counted_across_processes_with_a_state_dir(tmp_path: Path) -> None:
    # Given a plan armed for 2 hits and a shared state dir
    code = (
        "from reliability.faults import crash_point\n"
        "crash_point('fence:after-effect:pay')\n"
        "print('survived')\n"
    )
    env = {
        "RETRYSAFE_CRASH_POINTS": "fence:after-effect:pay=2",
        "RETRYSAFE_CRASH_MODE": "exit",
        "RETRYSAFE_CRASH_STATE_DIR": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
    }
    # When four separate processes reach the point
    results = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
        for _ in range(4)
    ]
    # Then the first two die for real (os._exit) and the others pass
    assert [r.returncode for r in results] == [EXIT_CODE, EXIT_CODE, 0, 0]
    assert [r.stdout.strip() for r in results] == ["", "", "survived", "survived"]
    assert "simulated crash at fence:after-effect:pay" in results[0].stderr
    assert len(list(tmp_path.iterdir())) == 2


def test_botocore_hooks_crash_before_or_after_a_call(ddb: Any) -> None:
    # Given a client instrumented to crash after its first TransactWriteItems and before a GetItem
    client = aws_client("dynamodb")
    plan = CrashPlan.parse("after:DynamoDB.PutItem=1,before:DynamoDB.GetItem=1", mode="raise")
    plan.instrument(client)
    item = {"id": {"S": "k"}}
    # When the put runs, Then it lands and the process "dies" after it
    with pytest.raises(SimulatedCrash, match=r"after:DynamoDB\.PutItem"):
        client.put_item(TableName=FENCES, Item=item)
    assert ddb.get_item(TableName=FENCES, Key=item)["Item"] == item
    # And the instrumented GetItem dies before it is sent; the second one goes through
    with pytest.raises(SimulatedCrash, match=r"before:DynamoDB\.GetItem"):
        client.get_item(TableName=FENCES, Key=item)
    assert client.get_item(TableName=FENCES, Key=item)["Item"] == item


def test_the_hook_points_use_the_plan_they_are_given() -> None:
    # Given a plan passed in (no plan in the environment)
    plan = CrashPlan.parse("before:SQS.GetQueueUrl=1,fence:after-effect:x=1", mode="raise")
    client = aws_client("sqs")
    # When production code instruments its client and reaches its point with it
    assert instrument(client, plan) is client
    # Then the plan's AWS point and its named point both fire
    with pytest.raises(SimulatedCrash, match=r"before:SQS\.GetQueueUrl"):
        client.get_queue_url(QueueName="q")
    with pytest.raises(SimulatedCrash, match=r"fence:after-effect:x"):
        crash_point("fence:after-effect:x", plan)


def test_instrument_without_aws_points_registers_nothing() -> None:
    class NoEvents:
        pass

    client = NoEvents()
    assert CrashPlan.parse("fence:after-effect:x").instrument(client) is client


# --- injected error responses ------------------------------------------------------------------


def _sqs(plan: CrashPlan) -> Any:
    return plan.instrument(aws_client("sqs"))


@pytest.mark.parametrize(
    ("point", "code", "status"),
    [
        ("error:SQS.SendMessage", "InternalFailure", 500),
        ("error:SQS.SendMessage:InternalError", "InternalError", 500),
        ("error:SQS.SendMessage:ServiceUnavailable", "ServiceUnavailable", 503),
        ("error:SQS.SendMessage:ThrottlingException", "ThrottlingException", 400),
        ("error:SQS.SendMessage:KmsThrottled/400", "KmsThrottled", 400),
        ("error:SQS.SendMessage:SomethingNew/502", "SomethingNew", 502),
    ],
)
def test_an_error_point_fails_the_call_with_the_services_code_and_status(
    aws: None, point: str, code: str, status: int
) -> None:
    plan = CrashPlan.parse(f"{point}=1", mode="raise")
    sqs = _sqs(plan)
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    # Given an armed error point, When the call is made, Then it fails as AWS would answer it
    with pytest.raises(ClientError) as raised:
        sqs.send_message(QueueUrl=url, MessageBody="x")
    error = raised.value.response
    assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (code, status)
    # And nothing reached the queue (an error point fails before the call), and one hit is spent
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    sqs.send_message(QueueUrl=url, MessageBody="x")


def test_an_error_point_raises_the_modeled_exception_class(ddb: Any) -> None:
    plan = CrashPlan.parse("error:DynamoDB.GetItem:ProvisionedThroughputExceededException", mode="raise")
    plan.instrument(ddb)
    with pytest.raises(ddb.exceptions.ProvisionedThroughputExceededException):
        ddb.get_item(TableName=FENCES, Key={"id": {"S": "x"}})


@pytest.mark.parametrize(
    "code", ["ReadTimeout", "ConnectTimeout", "EndpointConnectionError", "ConnectionClosed"]
)
def test_an_error_point_can_be_a_transport_failure(ddb: Any, code: str) -> None:
    plan = CrashPlan.parse(f"error:DynamoDB.GetItem:{code}", mode="raise")
    plan.instrument(ddb)
    with pytest.raises(TRANSPORT_ERRORS[code]):
        ddb.get_item(TableName=FENCES, Key={"id": {"S": "x"}})


def test_an_error_after_point_lets_the_call_happen_then_fails_it(ddb: Any) -> None:
    plan = CrashPlan.parse("error-after:DynamoDB.PutItem:ReadTimeout", mode="raise")
    plan.instrument(ddb)
    # When the put is made, Then the caller sees a timeout, yet the item was written
    with pytest.raises(ReadTimeoutError):
        ddb.put_item(TableName=FENCES, Item={"id": {"S": "lost-response"}})
    assert "Item" in ddb.get_item(TableName=FENCES, Key={"id": {"S": "lost-response"}})


@pytest.mark.parametrize(
    "spec",
    ["error:SQS", "error:SQS.SendMessage:Bad Code", "error:SQS.SendMessage:X/999", "error-before:SQS.X"],
)
def test_a_malformed_error_point_fails_at_parse(spec: str) -> None:
    with pytest.raises(ValueError, match="crash point"):
        CrashPlan.parse(spec)


def test_scoped_entries_of_a_shared_plan_arm_per_function_and_share_hits() -> None:
    # Given one plan for a whole in-process cloud, with an entry scoped to one function
    plan = CrashPlan.parse("fence:after-effect:x@publish-events=1,y", mode="raise")
    assert plan.points == {"y": 1}
    api, publish = plan.for_function("svc-dev-api"), plan.for_function("svc-dev-publish-events")
    # Then only the named function has it armed
    crash_point("fence:after-effect:x", api)
    with pytest.raises(SimulatedCrash):
        crash_point("fence:after-effect:x", publish)
    # And the hits of unscoped entries are shared by every function's view
    with pytest.raises(SimulatedCrash):
        crash_point("y", api)
    crash_point("y", publish)
    # And a plan without scoped entries is its own view
    unscoped = CrashPlan.parse("y")
    assert unscoped.for_function("any") is unscoped


# --- the module's own names --------------------------------------------------------------------


def test_the_plan_names_are_crashplans_loaded_on_first_use() -> None:
    from reliability.testing import crashplan, crashpoints  # noqa: PLC0415 - read at run time

    names = ("DEFAULT_ERROR_CODE", "ERROR_STATUS", "TRANSPORT_ERRORS", "CrashPlan", "ErrorPoint", "Mode")
    assert [getattr(crashpoints, name) is getattr(crashplan, name) for name in names] == [True] * len(names)


def test_any_other_name_is_missing_from_crashpoints() -> None:
    from reliability.testing import crashpoints  # noqa: PLC0415 - read at run time

    with pytest.raises(AttributeError) as missing:
        crashpoints.Nope  # noqa: B018 - the attribute read is the test
    assert str(missing.value) == "module 'reliability.testing.crashpoints' has no attribute 'Nope'"
    assert not hasattr(crashpoints, "parse")


def test_a_simulated_crash_names_its_point() -> None:
    crash = SimulatedCrash("fence:after-effect:Pay")
    assert (str(crash), crash.point) == (
        "simulated crash at fence:after-effect:Pay",
        "fence:after-effect:Pay",
    )


def test_a_parsed_plan_raises_by_default() -> None:
    plan = CrashPlan.parse("p")
    assert (plan.points, plan.mode, plan.state_dir, plan.scoped) == ({"p": 1}, "raise", None, ())
