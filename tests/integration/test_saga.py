"""The fenced saga: a crash after the provider call, permanent failures and compensation."""

from __future__ import annotations

import json

import pytest

from ops.invariants import check
from ops.redrive import redrive_execution
from reliability.testing.crashpoints import CrashPlan
from simulator.cloud import Clock, InProcessCloud, LambdaError, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# FenceBusy is retried 4 times (5 s, 10 s, 20 s, 40 s): the first three wait out the first dead
# attempt's 20 s lease, the fourth the second's, and after the third crash no FenceBusy retry is left.
CRASHES_TO_EXHAUST_RETRIES = 3
ORDER = {"customer_id": "customer-3", "currency": "EUR", "items": [{"sku": "sku-5", "quantity": 3}]}


def _stock(cloud: InProcessCloud, sku: str) -> int:
    item = cloud.dynamodb.get_item(
        TableName=cloud.outputs["InventoryTableName"], Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}}
    )["Item"]
    return int(item["stock"]["N"])


def _place(cloud: InProcessCloud, body: dict, key: str) -> str:
    response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": key})
    assert response.status == 202, response.body
    return str(response.body["order_id"])


def test_a_crash_after_the_provider_call_then_a_restart_charges_once(assembly):
    clock = Clock()
    # A crash is a dead sandbox (Runtime.ExitError), which the state machine retries: each retry
    # waits out the dead attempt's lease (FenceBusy, on the harness clock) and takes over. Three
    # crashes use up the FenceBusy retries, so the execution fails and an operator restarts it.
    plan = CrashPlan.parse(f"fence:after-effect:ChargePayment={CRASHES_TO_EXHAUST_RETRIES}", mode="raise")
    with running_cloud(assembly, crash_plan=plan, clock=clock) as cloud:
        before = _stock(cloud, "sku-5")
        # Given ChargePayment dies after the provider charged and before its fence completed,
        # on its first attempt and on every retry that took over from a dead one
        order_id = _place(cloud, ORDER, "crash-in-charge")
        cloud.settle()
        (listed,) = cloud.executions()
        first = cloud.wait(listed["executionArn"])
        assert first["status"] == "FAILED"
        history = cloud.sfn.get_execution_history(executionArn=first["executionArn"])["events"]
        assert any("SimulatedCrash" in json.dumps(e, default=str) for e in history)
        # Each crash was retried; each retry waited out the dead attempt's lease, then took over;
        # after the third crash the FenceBusy retries were used up
        charges = [i for i in cloud.invocations if i.function == cloud.function("ChargePayment")]
        exit_, busy = "Runtime.ExitError", "FenceBusy"
        assert [i.error_type for i in charges] == [exit_, busy, busy, busy, exit_, busy, exit_, busy]
        assert all("SimulatedCrash" in (i.traceback or "") for i in charges if i.error_type == exit_)
        crashed = cloud.api("GET", f"/orders/{order_id}").body
        # Every attempt that took over found the first attempt's charge by its order and token
        # (the provider's search, which never forgets) and recorded it: one call, one charge
        assert (len(crashed["provider_calls"]), len(crashed["charges"])) == (1, 1)
        assert crashed["steps"] == {"ReserveInventory": "DONE"}

        # When the dead attempt's lease has passed and the workflow is restarted with the same token
        clock.advance(cloud.functions[cloud.function("ChargePayment")].timeout + 1)
        restart = redrive_execution(cloud.sfn, execution_arn=first["executionArn"])
        second = cloud.wait(restart.execution_arn)
        cloud.settle()

        # Then the restart succeeds (ReserveInventory's fence answers for it), and there is one charge
        assert second["status"] == "SUCCEEDED"
        assert json.loads(second["input"]) == json.loads(first["input"])
        status = cloud.api("GET", f"/orders/{order_id}").body
        assert status["status"] == "COMPLETED"
        assert status["steps"]["ReserveInventory"] == "DONE"
        assert status["steps"]["ChargePayment"] == "DONE"
        assert len(status["charges"]) == 1
        # The restart's takeover reconciled too: the provider was called once in all
        assert len(status["provider_calls"]) == 1
        assert _stock(cloud, "sku-5") == before - 3
        report = check(cloud.stores())
        assert report.ok, report.to_text()
        row = report.row(order_id)
        assert (
            row.effects["ReserveInventory"],
            row.effects["ChargePayment"],
            row.effects["RecordLedger"],
            row.effects["notify"],
            row.effects["analytics"],
        ) == (
            1,
            1,
            1,
            1,
            1,
        )


def test_a_permanent_payment_failure_releases_inventory_once_and_fails_the_order(cloud: InProcessCloud):
    before = _stock(cloud, "sku-5")
    # Given a customer the provider always declines
    order_id = _place(cloud, {**ORDER, "customer_id": "declined-customer"}, "declined")

    # When the order runs
    cloud.settle()

    # Then the workflow ends Succeed (a handled business failure) with the order FAILED, compensated
    (execution,) = cloud.executions()
    assert execution["status"] == "SUCCEEDED"
    status = cloud.api("GET", f"/orders/{order_id}").body
    assert status["status"] == "FAILED"
    assert status["steps"] == {
        "ReserveInventory": "COMPENSATED",
        "ChargePayment": "FAILED",
        "ReleaseInventory": "DONE",
        "MarkFailed": "DONE",
    }
    assert [c["status"] for c in status["charges"]] == ["DECLINED"]
    assert _stock(cloud, "sku-5") == before
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    assert report.row(order_id).effects["ReleaseInventory"] == 1
    assert report.row(order_id).verdict == "compensated"

    # And replaying the compensation is a fence skip: released once, whatever the retries
    output = json.loads(cloud.sfn.describe_execution(executionArn=execution["executionArn"])["output"])
    state = {k: output[k] for k in ("order_id", "run", "token", "customer_id", "currency", "lines", "error")}
    state["results"] = {"ReserveInventory": output["results"]["ReserveInventory"]}
    replay = cloud.invoke("ReleaseInventory", state)
    assert replay == output["results"]["ReleaseInventory"]
    assert _stock(cloud, "sku-5") == before
    assert cloud.api("GET", f"/orders/{order_id}").body["steps"]["ReleaseInventory"] == "DONE"
    assert check(cloud.stores()).ok


def test_a_release_after_its_sku_was_removed_completes_for_the_skus_left(cloud: InProcessCloud):
    # Given an order of two skus that reserved both, then stopped before the charge; an operator
    # removes one of the skus from the catalog while the order holds its stock
    lines = [{"sku": "sku-5", "quantity": 3}, {"sku": "sku-6", "quantity": 1}]
    before = _stock(cloud, "sku-6")
    stop = cloud.stop_during("ChargePayment")
    _place(cloud, {**ORDER, "customer_id": "declined-removed", "items": lines}, "declined-removed")
    cloud.settle()
    (arn,) = stop.stopped
    execution = cloud.sfn.describe_execution(executionArn=arn)
    table, removed = cloud.outputs["InventoryTableName"], {"pk": {"S": "sku#sku-5"}, "sk": {"S": "catalog"}}
    cloud.dynamodb.delete_item(TableName=table, Key=removed)

    # When the compensation runs (the declined charge's Catch), twice
    state = json.loads(execution["input"])
    state["results"] = {"ReserveInventory": {"reserved": {"sku-5": 3, "sku-6": 1}}}
    state["error"] = {"Error": "PaymentDeclined", "Cause": "declined"}
    first = cloud.invoke("ReleaseInventory", state)
    replay = cloud.invoke("ReleaseInventory", state)

    # Then it completes (before: EffectConditionFailed on every redrive, the order stuck RUNNING):
    # the sku left gets its stock back once, the removed one is not recreated
    assert replay == first
    assert _stock(cloud, "sku-6") == before
    assert "Item" not in cloud.dynamodb.get_item(TableName=table, Key=removed)


def test_a_replayed_declined_charge_raises_the_same_business_error(cloud: InProcessCloud):
    order_id = _place(cloud, {**ORDER, "customer_id": "declined-again"}, "declined-replay")
    cloud.settle()
    (execution,) = cloud.executions()
    state = json.loads(cloud.sfn.describe_execution(executionArn=execution["executionArn"])["input"])

    with pytest.raises(LambdaError) as replayed:
        cloud.invoke("ChargePayment", state)

    assert replayed.value.error_type == "PaymentDeclined"
    status = cloud.api("GET", f"/orders/{order_id}").body
    assert len(status["provider_calls"]) == 1  # the replay never reached the provider


def test_out_of_stock_fails_the_order_without_charging(cloud: InProcessCloud):
    cloud.dynamodb.update_item(
        TableName=cloud.outputs["InventoryTableName"],
        Key={"pk": {"S": "sku#sku-20"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = :one, seeded_stock = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    order_id = _place(
        cloud,
        {**ORDER, "items": [{"sku": "sku-1", "quantity": 1}, {"sku": "sku-20", "quantity": 2}]},
        "out-of-stock",
    )

    cloud.settle()

    status = cloud.api("GET", f"/orders/{order_id}").body
    assert status["status"] == "FAILED"
    assert status["steps"] == {"ReserveInventory": "FAILED", "MarkFailed": "DONE"}
    assert status["charges"] == []
    assert status["provider_calls"] == []
    assert _stock(cloud, "sku-20") == 1  # all or nothing: sku-1 was not taken either
    report = check(cloud.stores())
    assert report.ok, report.to_text()


def test_many_orders_settle_with_every_invariant_holding(cloud: InProcessCloud):
    ids = [
        _place(
            cloud,
            {
                "customer_id": f"c-{n}",
                "currency": "EUR",
                "items": [{"sku": f"sku-{n % 20 + 1}", "quantity": n}],
            },
            f"bulk-{n}",
        )
        for n in range(1, 9)
    ]
    ids.append(_place(cloud, {**ORDER, "customer_id": "declined-bulk"}, "bulk-declined"))

    cloud.settle()

    report = check(cloud.stores())
    assert report.ok, report.to_text() + "".join(i.traceback or "" for i in cloud.invocations)
    assert sorted(row.verdict for row in report.rows) == ["compensated"] + ["completed"] * 8
    assert {row.entity_id for row in report.rows} == set(ids)
