"""No stranded order, and runs guarded by the order: a client's retry gets its stored order even
after a price change; the worker starts only the order's current run (a later run's message is
poison, an earlier run's a duplicate); run N+1 starts only through one conditional transition after
run N ended FAILED (ops.rerun)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config

from ops import rerun as rerun_cli
from ops.target import Target
from orders.adapters.order_store import DynamoOrderStore
from orders.contract import CreateOrderRequest, OrderItem
from orders.domain import ExecutionEnd, Order, OrderMessage, OrderStatus
from orders.errors import ExecutionFailed, OrderConflict, RerunRefused, RunNotCurrent
from orders.runs import Reruns, WorkflowStarter, workflow_input
from orders.workflow import SERVICE
from reliability.errors import PoisonMessage
from reliability.workflow_runs import RunMessage
from reliability_helpers import lose_answer, make_telemetry, read_emitted
from tests.unit.orders.test_service import OWNER, TELEMETRY, ListQueue, _service


class RecordingWorkflow:
    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, *, name: str, payload: Any) -> str:
        self.started.append(name)
        return self.execution_arn(name)

    def execution_arn(self, name: str) -> str:
        return f"arn:{name}"


def _request(quantity: int = 2, sku: str = "sku-1") -> CreateOrderRequest:
    return CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku=sku, quantity=quantity)])


def _set_price(ddb: Any, sku: str, cents: int) -> None:
    ddb.update_item(
        TableName="inventory",
        Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET price_cents = :p",
        ExpressionAttributeValues={":p": {"N": str(cents)}},
    )


def _set_status(ddb: Any, order_id: str, status: OrderStatus) -> None:
    ddb.update_item(
        TableName="orders",
        Key={"pk": {"S": f"order#{order_id}"}, "sk": {"S": "order"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": status.value}},
    )


# --- no stranded order ------------------------------------------------------------------------


def test_a_retry_after_a_price_change_gets_the_stored_order_and_its_message_again(ddb: Any) -> None:
    queue = ListQueue()
    service = _service(ddb, queue)
    first = service.place(_request(), stored_key="key-1", owner=OWNER)
    # Given the catalog price changed before the client retried (after a crash either side of the send)
    _set_price(ddb, "sku-1", 999_99)
    # When the client retries with the same key and body
    again = service.place(_request(), stored_key="key-1", owner=OWNER)
    # Then it is the same order, at the price it was accepted at, and its message went out again
    assert again.order_id == first.order_id
    assert service.view(first.order_id, caller=OWNER).total_cents == 2 * 199
    assert len(queue.sent) == 2


def test_a_retry_with_other_items_under_the_same_key_is_still_a_conflict(ddb: Any) -> None:
    service = _service(ddb, ListQueue())
    service.place(_request(quantity=2), stored_key="key-1", owner=OWNER)
    with pytest.raises(OrderConflict):
        service.place(_request(quantity=3), stored_key="key-1", owner=OWNER)


@pytest.mark.parametrize("status", [OrderStatus.RUNNING, OrderStatus.COMPLETED, OrderStatus.FAILED])
def test_a_retry_for_an_order_past_accepted_sends_nothing(ddb: Any, status: OrderStatus) -> None:
    queue = ListQueue()
    service = _service(ddb, queue)
    order = service.place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, status)
    assert service.place(_request(), stored_key="key-1", owner=OWNER).order_id == order.order_id
    assert len(queue.sent) == 1


# --- the worker starts only the order's current run -------------------------------------------


def _starter(ddb: Any, workflow: RecordingWorkflow) -> WorkflowStarter[Order]:
    return WorkflowStarter(
        stage="dev",
        entity=SERVICE.entity,
        store=DynamoOrderStore(client=ddb, table_name="orders"),
        workflow_input=workflow_input,
        workflow=workflow,
        telemetry=TELEMETRY,
    )


def _message(order_id: str, run: int) -> RunMessage:
    return RunMessage(entity_id=order_id, run=run, idempotency_key="key-1")


@pytest.mark.parametrize("status", [OrderStatus.ACCEPTED, OrderStatus.RUNNING, OrderStatus.COMPLETED])
def test_a_message_for_a_later_run_is_poison_and_starts_nothing(ddb: Any, status: OrderStatus) -> None:
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, status)
    workflow = RecordingWorkflow()
    with pytest.raises(PoisonMessage, match=r"message run 2 is not order .* current run 1"):
        _starter(ddb, workflow).start_once(_message(order.order_id, 2))
    assert workflow.started == []


@pytest.mark.parametrize("status", [OrderStatus.COMPLETED, OrderStatus.FAILED])
def test_the_current_run_of_a_finished_order_starts_nothing(ddb: Any, status: OrderStatus) -> None:
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, status)
    workflow = RecordingWorkflow()
    starter = _starter(ddb, workflow)
    message = OrderMessage(order.order_id, 1, "key-1")
    assert starter.start(message) == f"arn:{order.order_id}-r1"
    assert workflow.started == []
    with pytest.raises(RunNotCurrent):
        starter.start(OrderMessage(order.order_id, 3, "key-1"))


def test_a_duplicate_message_of_a_started_run_starts_nothing_more(ddb: Any) -> None:
    # Given an order whose run 1 the worker started
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    workflow = RecordingWorkflow()
    starter = _starter(ddb, workflow)
    arn = starter.start_once(_message(order.order_id, 1))
    # When the same message comes again (a redelivery, or the API's re-send)
    again = starter.start_once(_message(order.order_id, 1))
    # Then the order's record answers: the same execution, no second start
    assert again == arn == f"arn:{order.order_id}-r1"
    assert workflow.started == [f"{order.order_id}-r1"]


def test_mark_running_ignores_a_run_that_is_not_current(ddb: Any) -> None:
    store = DynamoOrderStore(client=ddb, table_name="orders")
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    store.mark_running(order.order_id, run=2, execution_arn="arn:stale")
    stored = store.get(order.order_id)
    assert stored is not None
    assert (stored.status, stored.execution_arn) == (OrderStatus.ACCEPTED, None)


# --- Express: the worker runs the execution and waits; the queue is the retry ------------------


class RecordingExpress:
    """An Express state machine: every run is a new execution (no name dedup), ending as told."""

    def __init__(self, ddb: Any, *statuses: str) -> None:
        self.ddb = ddb
        self.statuses = list(statuses)
        self.runs: list[tuple[str, dict[str, Any], str]] = []  # name, input, order status meanwhile

    def run(self, *, name: str, payload: Any) -> ExecutionEnd:
        status = self.statuses.pop(0)
        stored = DynamoOrderStore(client=self.ddb, table_name="orders").get(payload["order_id"])
        self.runs.append((name, dict(payload), stored.status.value if stored else "?"))
        error = None if status == "SUCCEEDED" else "FenceBusy"
        return ExecutionEnd(
            arn=f"arn:express:{name}:{len(self.runs)}", status=status, started=1.0, stopped=2.0, error=error
        )


def _express_starter(
    ddb: Any, express: RecordingExpress, telemetry: Any = TELEMETRY
) -> WorkflowStarter[Order]:
    return WorkflowStarter(
        stage="dev",
        entity=SERVICE.entity,
        store=DynamoOrderStore(client=ddb, table_name="orders"),
        workflow_input=workflow_input,
        workflow=RecordingWorkflow(),
        telemetry=telemetry,
        express=express,
    )


def test_an_express_run_is_marked_running_before_it_runs_and_its_end_is_recorded_and_logged(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    express = RecordingExpress(ddb, "SUCCEEDED")
    capsys.readouterr()
    # When the worker takes the order's message on an Express stage
    arn = _express_starter(ddb, express, make_telemetry()).start_once(_message(order.order_id, 1))
    # Then the execution ran under the run's token with the order's terms, while the order was
    # RUNNING (the sweeper leaves it to the queue), and its ARN is on the order
    ((name, payload, meanwhile),) = express.runs
    assert (name, payload["token"], payload["run"], meanwhile) == (
        f"{order.order_id}-r1",
        f"dev.{order.order_id}.r1",
        1,
        "RUNNING",
    )
    stored = DynamoOrderStore(client=ddb, table_name="orders").get(order.order_id)
    assert stored is not None
    assert (stored.status, stored.execution_arn) == (OrderStatus.RUNNING, arn)
    # And its end is logged, since Express keeps no history to read it from
    (line,) = read_emitted(capsys.readouterr().out).decisions()
    assert (line["decision"], line["execution"], line["status"], line["token"]) == (
        "ExecutionEnded",
        arn,
        "SUCCEEDED",
        payload["token"],
    )


def test_a_failed_express_run_raises_for_the_queue_and_its_retry_runs_again_under_the_same_token(
    ddb: Any,
) -> None:
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    express = RecordingExpress(ddb, "FAILED", "TIMED_OUT", "SUCCEEDED")
    starter = _express_starter(ddb, express)
    # Given runs that fail, then time out (the message comes back each time)
    with pytest.raises(ExecutionFailed, match="execution FAILED: FenceBusy"):
        starter.start_once(_message(order.order_id, 1))
    with pytest.raises(ExecutionFailed, match="execution TIMED_OUT"):
        starter.start_once(_message(order.order_id, 1))
    # When the message comes once more, the order still RUNNING
    arn = starter.start_once(_message(order.order_id, 1))
    # Then every attempt was a new execution of the same run, under the same token
    assert [payload["token"] for _, payload, _ in express.runs] == [f"dev.{order.order_id}.r1"] * 3
    assert arn.endswith(":3")


@pytest.mark.parametrize("status", [OrderStatus.COMPLETED, OrderStatus.FAILED])
def test_an_express_message_for_a_finished_order_runs_nothing(ddb: Any, status: OrderStatus) -> None:
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, status)
    express = RecordingExpress(ddb)
    assert _express_starter(ddb, express).start_once(_message(order.order_id, 1)) == f"{order.order_id}-r1"
    assert express.runs == []


# --- run N+1: one guarded transition ----------------------------------------------------------


@pytest.mark.parametrize("status", [OrderStatus.RUNNING, OrderStatus.COMPLETED])
def test_a_new_run_is_refused_unless_the_current_run_failed(ddb: Any, status: OrderStatus) -> None:
    queue = ListQueue()
    order = _service(ddb, queue).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, status)
    reruns = Reruns(
        entity=SERVICE.entity, store=DynamoOrderStore(client=ddb, table_name="orders"), queue=queue
    )
    with pytest.raises(RerunRefused, match=f"is {status.value} on run 1"):
        reruns.start_next_run(order.order_id)
    assert len(queue.sent) == 1


def test_a_failed_run_is_followed_by_one_next_run_whose_message_the_worker_starts(ddb: Any) -> None:
    queue = ListQueue()
    order = _service(ddb, queue).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, OrderStatus.FAILED)
    store = DynamoOrderStore(client=ddb, table_name="orders")
    reruns = Reruns(entity=SERVICE.entity, store=store, queue=queue)
    # When the operator asks for a new run
    next_run = reruns.start_next_run(order.order_id)
    # Then the order is on run 2, ACCEPTED, and run 2's message went out
    assert (next_run.run, next_run.status) == (2, OrderStatus.ACCEPTED)
    assert queue.sent[-1] == {"order_id": order.order_id, "run": 2, "idempotency_key": "key-1"}
    # And asked again (a crash after the transition), it only re-sends run 2's message
    assert reruns.start_next_run(order.order_id).run == 2
    assert [m["run"] for m in queue.sent] == [1, 2, 2]
    # And the worker starts run 2
    workflow = RecordingWorkflow()
    _starter(ddb, workflow).start_once(_message(order.order_id, 2))
    assert workflow.started == [f"{order.order_id}-r2"]


@pytest.mark.parametrize("status", [OrderStatus.ACCEPTED, OrderStatus.RUNNING, OrderStatus.COMPLETED])
def test_a_late_copy_of_an_earlier_runs_message_is_a_duplicate_not_poison(
    ddb: Any, capsys: pytest.CaptureFixture[str], status: OrderStatus
) -> None:
    # Given an order whose run 1 ended FAILED, then `make rerun` began run 2 (not started yet,
    # started, or completed)
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, OrderStatus.FAILED)
    Reruns(
        entity=SERVICE.entity, store=DynamoOrderStore(client=ddb, table_name="orders"), queue=ListQueue()
    ).start_next_run(order.order_id)
    _set_status(ddb, order.order_id, status)
    workflow = RecordingWorkflow()
    starter = WorkflowStarter(
        stage="dev",
        entity=SERVICE.entity,
        store=DynamoOrderStore(client=ddb, table_name="orders"),
        workflow_input=workflow_input,
        workflow=workflow,
        telemetry=make_telemetry(),
    )
    capsys.readouterr()
    # When a straggling copy of run 1's message reaches the worker
    arn = starter.start_once(_message(order.order_id, 1))
    # Then it is acknowledged as the duplicate it is (no DLQ, nobody paged): run 1's execution,
    # nothing started, the order untouched, one DedupHit naming run 1 and the current run
    assert arn == f"arn:{order.order_id}-r1"
    assert workflow.started == []
    stored = DynamoOrderStore(client=ddb, table_name="orders").get(order.order_id)
    assert stored is not None
    assert (stored.run, stored.status, stored.execution_arn) == (2, status, None)
    (line,) = read_emitted(capsys.readouterr().out).decisions()
    assert (line["decision"], line["step"], line["run"], line["current_run"]) == ("DedupHit", "worker", 1, 2)
    # While a message for run 3, which nobody decided on, is still poison
    with pytest.raises(PoisonMessage, match=r"message run 3 is not order .* current run 2"):
        starter.start_once(_message(order.order_id, 3))
    assert workflow.started == []


def test_ops_rerun_prints_the_new_run_or_refuses(
    ddb: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    target = Target(
        endpoint_url=None, region="us-east-1", outputs={"OrdersTableName": "orders", "OrdersQueueUrl": url}
    )
    monkeypatch.setattr(Target, "resolve", classmethod(lambda cls, **_: target))
    order = _service(ddb, ListQueue()).place(_request(), stored_key="key-1", owner=OWNER)
    # Refused while run 1 is running, naming why
    _set_status(ddb, order.order_id, OrderStatus.RUNNING)
    assert rerun_cli.main([order.order_id]) == 1
    assert "is RUNNING on run 1" in capsys.readouterr().err
    _set_status(ddb, order.order_id, OrderStatus.FAILED)
    assert rerun_cli.main([order.order_id]) == 0
    assert json.loads(capsys.readouterr().out) == {"order_id": order.order_id, "run": 2, "status": "ACCEPTED"}
    (message,) = sqs.receive_message(QueueUrl=url)["Messages"]
    assert json.loads(message["Body"])["run"] == 2
    assert rerun_cli.main(["o-none"]) == 1


@pytest.mark.parametrize("meanwhile", [None, OrderStatus.RUNNING])
def test_a_rerun_whose_transition_landed_but_whose_answer_was_lost_is_not_refused(
    ddb: Any, meanwhile: OrderStatus | None
) -> None:
    # Given an order whose run 1 ended FAILED, and an operator's client that retries as botocore's
    # standard mode does (ops.target's)
    queue = ListQueue()
    order = _service(ddb, queue).place(_request(), stored_key="key-1", owner=OWNER)
    _set_status(ddb, order.order_id, OrderStatus.FAILED)
    client = boto3.client("dynamodb", region_name="us-east-1", config=Config(retries={"mode": "standard"}))
    # And the transition's UpdateItem lands but its answer is lost, so the SDK sends it again
    # (meanwhile, the sweeper may have re-sent run 2's message and the worker started it)
    attempts = lose_answer(client, "UpdateItem")
    if meanwhile is not None:
        client.meta.events.register(
            "before-send.dynamodb.UpdateItem",
            lambda **_: _set_status(ddb, order.order_id, meanwhile) if len(attempts) == 2 else None,
        )
    # When the operator asks for run 2
    next_run = Reruns(
        entity=SERVICE.entity, store=DynamoOrderStore(client=client, table_name="orders"), queue=queue
    ).start_next_run(order.order_id)
    # Then it is run 2 (not RerunRefused), and run 2's message went out unless run 2 had started
    assert len(attempts) == 2
    assert (next_run.run, next_run.status) == (2, meanwhile or OrderStatus.ACCEPTED)
    assert [m["run"] for m in queue.sent] == ([1, 2] if meanwhile is None else [1])
    # And the order is on run 2, once
    stored = DynamoOrderStore(client=ddb, table_name="orders").get(order.order_id)
    assert stored is not None
    assert stored.run == 2
