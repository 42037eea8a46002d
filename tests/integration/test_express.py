"""An Express stage on the simulator (local-express): the worker runs each order's execution and
waits for it, the orders queue is the retry, the fences make every copy of a run safe."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ops import redrive
from ops.invariants import EntityRow, check
from ops.story.collect import Collector
from ops.story.logs import Invocation, _assemble
from ops.story.model import Lane, Outcome
from ops.target import Target
from orders.adapters.order_store import DynamoOrderStore
from orders.observability import logger
from reliability.testing.crashpoints import CrashPlan
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


def _row(cloud: InProcessCloud, order_id: str) -> EntityRow:
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    return report.row(order_id)


def _orders(cloud: InProcessCloud) -> DynamoOrderStore:
    return DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"])


def _tokens(cloud: InProcessCloud) -> list[str]:
    """The token every execution ran under (the harness sees their inputs; no API does on Express)."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends  # noqa: PLC0415

    from emulator.patches_express import express_executions  # noqa: PLC0415

    backend = stepfunctions_parser_backends[ACCOUNT][REGION]
    return [e.input_data["token"] for e in express_executions(backend, cloud.outputs["StateMachineArn"])]


def test_an_express_order_completes_end_to_end_with_no_execution_api(cloud: InProcessCloud) -> None:
    order_id = _place(cloud, "express-e2e")
    cloud.settle()
    # Then the order completed once, through one Express execution the worker waited for
    row = _row(cloud, order_id)
    assert (
        row.status,
        row.effects["ChargePayment"],
        row.effects["provider calls"],
        row.effects["notify"],
        row.effects["analytics"],
    ) == (
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
    assert (
        row.status,
        row.effects["ChargePayment"],
        row.effects["provider calls"],
        row.effects["notify"],
        row.effects["analytics"],
    ) == (
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
        assert (row.status, row.effects["ChargePayment"], row.effects["provider calls"]) == (
            "COMPLETED",
            1,
            1,
        )


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
        assert dead["entity_id"] == order_id
        # (the task's error message, not Lambda's whole error document)
        assert (
            dead["reason"]
            == "execution FAILED: StoreError: DynamoDB rejected the request: ValidationException"
        )
        assert cloud.messages("OrdersQueueUrl") == []


class _CapturedLogs(logging.Handler):
    """The functions' log lines as CloudWatch Logs would hold them (`ops.story.logs.LogSource`)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(logger.registered_formatter.format(record)))

    def invocations(self, functions: Mapping[str, str], needles: Sequence[str]) -> list[Invocation]:
        found: list[Invocation] = []
        for short, physical in functions.items():
            lines = [line for line in self.lines if line.get("function_name") == physical]
            found.extend(_assemble(short, lines, {}, needles))
        return found


@contextmanager
def _captured_logs() -> Iterator[_CapturedLogs]:
    capture, functions = _CapturedLogs(), logging.getLogger(logger.name)  # the Powertools logger's own
    functions.addHandler(capture)
    try:
        yield capture
    finally:
        functions.removeHandler(capture)


def test_the_story_of_a_retried_express_order_is_told_without_any_execution_api(
    express_assembly: Path,
) -> None:
    plan = CrashPlan.parse(f"{FAIL_RESERVE}=1", mode="raise")
    with _captured_logs() as logs, running_cloud(express_assembly, crash_plan=plan) as cloud:
        # Given an order whose first execution failed and the queue's second one completed it
        order_id = _place(cloud, "express-story")
        cloud.pump("OrdersQueueUrl", "Worker")
        cloud.settle()
        # When its story is gathered, as `make story` does (the emulator refuses every execution API)
        story = Collector(outputs=cloud.outputs, client=cloud.client, logs=logs).collect(order_id)
    # Then it tells both executions of the run, from the worker's lines, under the run's token
    ends = [
        (e.outcome, e.detail)
        for e in story.entries
        if e.lane is Lane.EXECUTION and e.outcome != Outcome.EXECUTION_STARTED
    ]
    assert [outcome for outcome, _ in ends] == [Outcome.EXECUTION_FAILED, Outcome.SUCCEEDED]
    assert ends[0][1].startswith("StoreError")
    assert story.facts["tokens"] == [f"local-express.{order_id}.r1"]
    # and each step's attempts and records, as on Standard (the refused attempt wrote no line of
    # its own: the platform's REPORT line, which this capture lacks, tells it on AWS and the local
    # cloud, and the execution's end tells why it failed)
    assert [e.outcome for e in story.attempts("ReserveInventory")] == [Outcome.RAN]
    assert story.facts["step_statuses"]["MarkCompleted"] == "DONE"
    assert (story.status, story.verdict) == ("COMPLETED", "completed")


def test_make_redrive_workflow_on_express_runs_the_run_again_under_the_same_token(
    express_assembly: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    receives = 10  # infra.capacity.MAX_RECEIVE_COUNT: every receive fails, the message ends in the DLQ
    plan = CrashPlan.parse(f"{FAIL_RESERVE}={receives}", mode="raise")
    with running_cloud(express_assembly, crash_plan=plan) as cloud:
        order_id = _place(cloud, "express-redrive")
        for _ in range(receives):
            cloud.pump("OrdersQueueUrl", "Worker")
        assert len(cloud.messages("OrdersDlqUrl")) == 1
        target = Target(endpoint_url=None, region=REGION, outputs=cloud.outputs)
        monkeypatch.setattr(Target, "resolve", classmethod(lambda cls, **_: target))
        # Express has no execution to name: without the order, it says what to do
        assert redrive.main(["workflow"]) == 1
        assert "name the order (ID=<id>)" in capsys.readouterr().err
        # When an operator restarts the order's run (`make redrive-workflow ORDER=...`)
        assert redrive.main(["workflow", "--id", order_id]) == 0
        (result,) = json.loads(capsys.readouterr().out)
        assert (result["method"], result["execution_arn"]) == (
            "restart-with-same-token-by-the-queue",
            f"{order_id}-r1",
        )
        cloud.settle()
        # Then the worker ran the run once more, under the same token, to the end
        assert [e["status"] for e in cloud.executions()] == ["FAILED"] * receives + ["SUCCEEDED"]
        assert len(set(_tokens(cloud))) == 1
        assert _row(cloud, order_id).status == "COMPLETED"
        # And a finished order has nothing to restart
        assert redrive.main(["workflow", "--id", order_id]) == 1
        assert "is COMPLETED: nothing to restart" in capsys.readouterr().err


def test_an_express_restart_past_the_restart_safe_window_is_refused(cloud: InProcessCloud) -> None:
    order_id = _place(cloud, "express-too-late")
    orders, queue = _orders(cloud), _ListQueue()
    order = orders.get(order_id)
    assert order is not None
    late = datetime.fromisoformat(order.created_at).timestamp() + redrive.RESTART_SAFE_SECONDS
    refused = redrive.restart_express_run(store=orders, queue=queue, entity_id=order_id, now=late)
    assert refused.method is redrive.Method.REFUSED
    assert queue.sent == []
    allowed = redrive.restart_express_run(store=orders, queue=queue, entity_id=order_id, now=late - 60)
    assert allowed.method is redrive.Method.QUEUED_RESTART
    assert queue.sent == [{"order_id": order_id, "run": 1, "idempotency_key": order.idempotency_key}]


class _ListQueue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: Mapping[str, Any]) -> str:
        self.sent.append(dict(body))
        return str(len(self.sent))
