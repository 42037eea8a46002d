"""An Express stage on the simulator (local-express): the worker runs each order's execution and
waits for it, the orders queue is the retry, the fences make every copy of a run safe."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ops.invariants import OrderRow, check
from orders.adapters.order_store import DynamoOrderStore
from reliability.crashpoints import CrashPlan
from simulator.cloud import InProcessCloud, running_cloud
from simulator.events import ACCOUNT, REGION

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-x", "currency": "EUR", "items": [{"sku": "sku-4", "quantity": 1}]}
# ReserveInventory's transaction refused as invalid: StoreError, which no Retry takes, fails the execution.
FAIL_RESERVE = "error:DynamoDB.TransactWriteItems:ValidationException@reserve-inventory"


@pytest.fixture(scope="module")
def express_assembly(synthesized: Any) -> Path:
    return Path(synthesized("local-express"))


@pytest.fixture
def cloud(express_assembly: Path) -> Iterator[InProcessCloud]:
    with running_cloud(express_assembly) as deployed:
        yield deployed


def _place(cloud: InProcessCloud, key: str) -> str:
    response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": key})
    assert response.status == 202, response.body
    return str(response.body["order_id"])


def _row(cloud: InProcessCloud, order_id: str) -> OrderRow:
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    return report.row(order_id)


def _orders(cloud: InProcessCloud) -> DynamoOrderStore:
    return DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"])


def _tokens(cloud: InProcessCloud) -> list[str]:
    """The token every execution ran under (the harness sees their inputs; no API does on Express)."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends  # noqa: PLC0415

    from localcloud.patches_express import express_executions  # noqa: PLC0415

    backend = stepfunctions_parser_backends[ACCOUNT][REGION]
    return [e.input_data["token"] for e in express_executions(backend, cloud.outputs["StateMachineArn"])]


def test_an_express_order_completes_end_to_end_with_no_execution_api(cloud: InProcessCloud) -> None:
    order_id = _place(cloud, "express-e2e")
    cloud.settle()
    # Then the order completed once, through one Express execution the worker waited for
    row = _row(cloud, order_id)
    assert (row.status, row.charges, row.provider_calls, row.notifications, row.aggregate_counts) == (
        "COMPLETED",
        1,
        1,
        1,
        1,
    )
    (execution,) = cloud.executions()
    assert execution["status"] == "SUCCEEDED"
    assert execution["executionArn"].split(":")[5] == "express"
    stored = _orders(cloud).get(order_id)
    assert stored is not None
    assert stored.execution_arn == execution["executionArn"]
    # And, as on AWS, Step Functions has nothing more to say about it
    with pytest.raises(ClientError, match="InvalidArn"):
        cloud.sfn.get_execution_history(executionArn=execution["executionArn"])


def test_two_copies_of_one_run_executed_concurrently_have_their_effects_once(
    cloud: InProcessCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one order's message, delivered to two workers at once (SQS may), whose executions both
    # reach ReserveInventory before either goes on
    order_id = _place(cloud, "express-twice")
    messages, event = cloud.receive_batch("OrdersQueueUrl", batch_size=1)
    assert len(messages) == 1
    both_at_the_first_step = threading.Barrier(2, timeout=60)
    reserve, call = cloud.function("ReserveInventory"), cloud.call

    def meeting_at_the_first_step(function_name: str, event: Any) -> Any:
        if function_name == reserve:
            both_at_the_first_step.wait()
        return call(function_name, event)

    monkeypatch.setattr(cloud, "call", meeting_at_the_first_step)
    answers: list[Any] = []
    workers = [
        threading.Thread(target=lambda: answers.append(cloud.invoke("Worker", event))) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    # When both executions of the same name ran to their end, concurrently
    assert answers == [{"batchItemFailures": []}] * 2
    executions = cloud.executions()
    assert [e["status"] for e in executions] == ["SUCCEEDED"] * 2
    assert len({e["name"] for e in executions}) == 1
    assert len({e["executionArn"] for e in executions}) == 2
    assert len(set(_tokens(cloud))) == 1
    # Then every effect happened once: one reservation, one charge, one provider call, one ledger
    # entry, one event to each consumer (the second copy's steps were skipped or waited out)
    cloud.settle()
    row = _row(cloud, order_id)
    assert (row.status, row.charges, row.provider_calls, row.notifications, row.aggregate_counts) == (
        "COMPLETED",
        1,
        1,
        1,
        1,
    )


def test_a_failed_execution_is_run_again_by_the_queue_under_the_same_token(express_assembly: Path) -> None:
    plan = CrashPlan.parse(f"{FAIL_RESERVE}=1", mode="raise")
    with running_cloud(express_assembly, crash_plan=plan) as cloud:
        order_id = _place(cloud, "express-retried")
        # Given the run's first execution fails
        first = cloud.pump("OrdersQueueUrl", "Worker")
        assert len(first.failed) == 1
        assert first.error is None
        (failed,) = cloud.executions()
        assert failed["status"] == "FAILED"
        running = _orders(cloud).get(order_id)
        assert running is not None
        assert running.status.value == "RUNNING"  # the sweeper leaves it to the queue
        # When the orders queue brings the message back
        assert cloud.pump("OrdersQueueUrl", "Worker").failed == []
        # Then a second execution ran the same run, under the same token, to the end
        assert [e["status"] for e in cloud.executions()] == ["FAILED", "SUCCEEDED"]
        (token,) = set(_tokens(cloud))
        assert token.endswith(f"{order_id}.r1")
        cloud.settle()
        row = _row(cloud, order_id)
        assert (row.status, row.charges, row.provider_calls) == ("COMPLETED", 1, 1)


def test_a_run_that_fails_on_every_receive_ends_in_the_dlq_with_the_executions_error(
    express_assembly: Path,
) -> None:
    plan = CrashPlan.parse(f"{FAIL_RESERVE}=100", mode="raise")
    with running_cloud(express_assembly, crash_plan=plan) as cloud:
        order_id = _place(cloud, "express-poison")
        receives = int(cloud.functions[cloud.function("Worker")].environment["MAX_RECEIVE_COUNT"])
        for _ in range(receives):
            cloud.pump("OrdersQueueUrl", "Worker")
        # Then after maxReceiveCount failed executions the message is in the DLQ, with their error
        assert len(cloud.executions()) == receives
        (dead,) = cloud.messages("OrdersDlqUrl")
        assert dead["order_id"] == order_id
        assert dead["reason"].startswith("execution FAILED: StoreError")
        assert cloud.messages("OrdersQueueUrl") == []
