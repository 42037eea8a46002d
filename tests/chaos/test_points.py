"""Crash points: one before and after every AWS call of every function, and between each external
effect and its record; every client a runtime builds is instrumented."""

from __future__ import annotations

import types
from collections import Counter
from unittest import mock

import boto3
import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError
from moto import mock_aws

from chaos.cloud import ChaosCloud, chaos_cloud
from chaos.points import CrashController, FunctionPlan, PointHit
from chaos.scenarios import run_requests
from ops.target import CLIENT_CONFIG as OPERATOR_CLIENT_CONFIG
from orders.runtime import CLIENT_CONFIG
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

HAPPY_PATH = {
    "api",
    "worker",
    "reserve-inventory",
    "charge-payment",
    "record-ledger",
    "publish-events",
    "mark-completed",
    "notify",
    "analytics",
    "sweep-accepted",  # recover() lets the sweeper's time come once everything is at rest
}


def test_a_recording_run_reaches_points_in_every_function_of_the_happy_path(completed_points):
    functions = {hit.function for hit in completed_points}
    assert functions == HAPPY_PATH
    # Every AWS call has a point before AND after it, in every function
    for function in functions:
        calls = Counter(
            (hit.point.split(":", 1)[0], hit.point.split(":", 1)[1])
            for hit in completed_points
            if hit.function == function and hit.point.startswith(("before:", "after:"))
        )
        operations = {operation for _, operation in calls}
        assert operations, function
        for operation in operations:
            assert calls[("before", operation)] == calls[("after", operation)] >= 1, (function, operation)
    # Between each external effect and its record: the leased steps (the worker has no record: its
    # start is deduped by the execution name)
    explicit = {hit.label for hit in completed_points if hit.point.startswith("fence:")}
    assert explicit == {
        "charge-payment:fence:after-effect:ChargePayment#1",
        "publish-events:fence:after-effect:PublishEvents#1",
    }


def test_the_provider_call_and_the_charge_each_have_their_own_points(completed_points):
    charge = [hit.point for hit in completed_points if hit.function == "charge-payment"]
    # claim, raw call, charge, [effect/record boundary], complete (which is the step's status)
    assert charge == [
        "before:DynamoDB.UpdateItem",
        "after:DynamoDB.UpdateItem",
        "before:DynamoDB.PutItem",
        "after:DynamoDB.PutItem",
        "before:DynamoDB.PutItem",
        "after:DynamoDB.PutItem",
        "fence:after-effect:ChargePayment",
        "before:DynamoDB.UpdateItem",
        "after:DynamoDB.UpdateItem",
    ]


def test_every_aws_call_made_by_handler_code_goes_through_an_instrumented_client(assembly):
    controller = CrashController()
    uninstrumented: list[str] = []
    calls = Counter[str]()
    original = BaseClient._make_api_call
    holder: dict[str, ChaosCloud] = {}

    def spy(client, operation_name, api_params):
        cloud = holder.get("cloud")
        function = cloud.in_handler() if cloud is not None else None
        if function is not None:
            calls[function] += 1
            if not controller.instrumented(client):
                uninstrumented.append(f"{function}: {operation_name}")
        return original(client, operation_name, api_params)

    with (
        mock.patch.object(BaseClient, "_make_api_call", spy),
        chaos_cloud(assembly, controller=controller) as cloud,
    ):
        holder["cloud"] = cloud
        verdict = run_requests(cloud, ["completed", "payment-declined", "out-of-stock"])
        runtimes = dict(cloud._runtimes)

    assert verdict.ok, verdict.violations
    assert uninstrumented == []
    assert len(calls) == 12  # every function ran handler code that called AWS
    # and each runtime's clients are the instrumented ones, built as the functions build theirs
    # (the SDK's standard retries, 3 attempts, their timeouts): a resend happens as on AWS
    for runtime in runtimes.values():
        for service in ("dynamodb", "sqs", "stepfunctions"):
            if service in vars(runtime):
                client = vars(runtime)[service]
                assert controller.instrumented(client)
                assert client.meta.config.retries == CLIENT_CONFIG.retries
                assert client.meta.config.read_timeout == CLIENT_CONFIG.read_timeout


def test_the_operator_tools_clients_are_built_as_theirs_and_go_through_the_controller(assembly):
    controller = CrashController()
    with chaos_cloud(assembly, controller=controller) as cloud:
        for tool, service in (
            ("ops.rerun", "dynamodb"),
            ("ops.redrive", "stepfunctions"),
            ("ops.redrive", "sqs"),
        ):
            client = cloud.operator_client(tool, service)
            assert controller.instrumented(client)
            assert client.meta.config.retries == OPERATOR_CLIENT_CONFIG.retries


def test_a_lost_answer_lands_and_the_sdk_sends_the_same_request_again():
    # Given a client built as the functions build theirs, and the answer of its 2nd PutItem to be lost
    controller = CrashController()
    waited: list[float] = []
    controller.wait = waited.append
    controller.arm_lost([PointHit("api", "after:DynamoDB.PutItem", 2)])
    sends: list[str] = []
    table = {"TableName": "t"}
    with mock_aws(), mock.patch("botocore.endpoint.time", types.SimpleNamespace(sleep=waited.append)):
        client = boto3.client("dynamodb", region_name="us-east-1", config=CLIENT_CONFIG)
        client.create_table(
            **table,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        FunctionPlan(controller, "api").instrument(client)
        client.meta.events.register_first("before-send", lambda **_: sends.append("send"))
        client.put_item(**table, Item={"id": {"S": "a"}})
        # When a conditional write's answer is lost
        with pytest.raises(ClientError, match="ConditionalCheckFailedException"):
            client.put_item(**table, Item={"id": {"S": "b"}}, ConditionExpression="attribute_not_exists(id)")
        # Then it had landed (the item is there), and the SDK's resend met that write
        assert "Item" in client.get_item(**table, Key={"id": {"S": "b"}})
        assert sends == ["send", "send", "send", "send"]  # a, b, b again, the read
        assert [h.label for h in controller.lost_fired] == ["api:after:DynamoDB.PutItem#2"]
        # after waiting out the client's read timeout (on the world's clock) and the SDK's backoff
        assert waited[0] == CLIENT_CONFIG.read_timeout
        assert len(waited) == 2
        # and only once: the next call's answer comes back
        client.put_item(**table, Item={"id": {"S": "c"}}, ConditionExpression="attribute_not_exists(id)")


def test_an_armed_hit_crashes_only_at_its_occurrence():
    controller = CrashController()
    plan = controller.plan_for("charge-payment")
    controller.arm([PointHit("charge-payment", "after:DynamoDB.PutItem", 2)])
    plan.hit("after:DynamoDB.PutItem")  # the 1st passes
    with pytest.raises(SimulatedCrash, match=r"charge-payment:after:DynamoDB\.PutItem#2"):
        plan.hit("after:DynamoDB.PutItem")
    plan.hit("after:DynamoDB.PutItem")  # fired once, then disarmed
    assert [h.label for h in controller.fired] == ["charge-payment:after:DynamoDB.PutItem#2"]
    assert PointHit.parse("charge-payment:after:DynamoDB.PutItem#2") == controller.fired[0]


def test_a_function_plan_is_the_crash_plan_type_the_runtime_and_fences_take():
    plan = FunctionPlan(CrashController(), "api")
    assert isinstance(plan, CrashPlan)
    assert plan.armed("before:DynamoDB.PutItem")  # every point is live under the harness
