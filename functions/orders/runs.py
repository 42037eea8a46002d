"""An order's runs: the worker starts each one once (`WorkflowStarter`); an operator, or the
`sweep-accepted` schedule, starts the next or re-sends a stranded one (`Reruns`). Plain Python
over the ports, without the API's contract or the saga.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from orders.domain import (
    TERMINAL_STATUSES,
    Order,
    OrderMessage,
    OrderStatus,
    WorkflowInput,
    execution_name,
)
from orders.errors import (
    ExecutionConflict,
    ExecutionFailed,
    OrderNotFound,
    RerunRefused,
    RunNotCurrent,
    UnknownOrder,
)
from reliability.errors import PoisonMessage
from reliability.keys import execution_token
from reliability.telemetry import Decision

if TYPE_CHECKING:  # Protocols and types: annotations only, no module to load at run time
    from datetime import datetime

    from orders.messages import OrderMessageModel
    from orders.ports import ExpressWorkflow, OrderStore, Queue, Workflow
    from reliability.telemetry import Telemetry

# A failed task's cause can be a whole traceback; the line keeps its head (the DLQ reason less).
CAUSE_LOGGED_CHARS = 512


@dataclass
class WorkflowStarter:
    """The worker's use case: one workflow execution per (order, run).

    Standard: one dedup mechanism, the execution name `<order_id>-r<run>` (a second start with
    the same input is answered with the first's ARN, `Workflow.start`). The order's own record
    tells a duplicate message apart before any start: RUNNING with an ARN on this run means started.

    Express (`express` set): the worker runs the execution and waits for its end (`_run_express`);
    Express does not dedupe names, so only a finished order is a duplicate, and the orders queue
    is the run's durable retry."""

    stage: str
    orders: OrderStore
    workflow: Workflow
    telemetry: Telemetry
    express: ExpressWorkflow | None = None

    def start_once(self, raw: OrderMessageModel) -> str:
        """`start`, with a message that can never succeed turned into poison. Returns the ARN."""
        message = OrderMessage(order_id=raw.order_id, run=raw.run, idempotency_key=raw.idempotency_key)
        try:
            return self.start(message)
        except (UnknownOrder, RunNotCurrent, ExecutionConflict) as error:
            raise PoisonMessage(str(error)) from error

    def start(self, message: OrderMessage) -> str:
        """Start `<order_id>-r<run>` with the `WorkflowInput`; record RUNNING + ARN.

        The run is the order's decision, never the message's: a message for a run after the
        order's current one (a run 2 for an order on run 1, COMPLETED or still running) is poison
        (`RunNotCurrent`): a run after the first begins only by `Reruns.start_next_run`. A message
        for an earlier run is a late copy of a message already consumed: run N+1 began only once
        run N had ended FAILED, so that run was started and is over; like a message for a run
        already started (the order has its ARN), it is a duplicate: no call but the read
        (`DedupHit`). A message for the current run of an order that finished without an ARN
        recorded (its steps were run by hand) records the ARN and starts nothing.

        Raises `UnknownOrder` (poison) for an order that does not exist or whose key lineage does
        not match, and `ExecutionConflict` (poison) when the name exists with another input.
        """
        order = self.orders.get(message.order_id)
        if order is None:
            raise UnknownOrder(f"no order {message.order_id!r}")
        if order.idempotency_key != message.idempotency_key:
            raise UnknownOrder(f"message key lineage does not match order {message.order_id!r}")
        if message.run > order.run:
            raise RunNotCurrent(
                f"message run {message.run} is not order {order.order_id}'s current run {order.run} "
                f"({order.status.value}); a new run starts only with `make rerun ORDER={order.order_id}`"
            )
        token = execution_token(stage=self.stage, business_id=message.order_id, run=message.run)
        name = execution_name(message.order_id, message.run)
        if message.run < order.run:
            status = order.status.value  # the current run's, named beside it
            self.telemetry.decision(
                Decision.DEDUP_HIT, token=token, step="worker", status=status, current_run=order.run
            )
            return self.workflow.execution_arn(name) if self.express is None else name
        if self.express is not None:
            return self._run_express(self.express, order, run=message.run, token=token, name=name)
        if order.status is not OrderStatus.ACCEPTED and order.execution_arn:
            self.telemetry.decision(Decision.DEDUP_HIT, token=token, step="worker", status=order.status.value)
            return order.execution_arn
        if order.status in TERMINAL_STATUSES:
            arn = self.workflow.execution_arn(name)
        else:
            arn = self.workflow.start(
                name=name, payload=WorkflowInput(terms=order, run=message.run, token=token).as_dict()
            )
        self.orders.mark_running(message.order_id, run=message.run, execution_arn=arn)
        return arn

    def _run_express(self, express: ExpressWorkflow, order: Order, *, run: int, token: str, name: str) -> str:
        """The current run on Express: a finished order is a duplicate (`DedupHit`); otherwise the
        order is marked RUNNING (the sweeper leaves it to the queue from then on), the execution
        runs under the run's token while the worker waits, and its end is recorded on the order and
        logged (`ExecutionEnded`: Express keeps no history). An order that is RUNNING already had
        an execution that failed, timed out, lost its worker or is still running (a duplicate
        message): starting one more is the only way on, and the fences make every copy's effects
        happen once. A run that did not succeed raises `ExecutionFailed`: the queue retries it."""
        if order.status in TERMINAL_STATUSES:
            self.telemetry.decision(Decision.DEDUP_HIT, token=token, step="worker", status=order.status.value)
            return order.execution_arn or name
        self.orders.mark_running(order.order_id, run=run, execution_arn=None)
        end = express.run(name=name, payload=WorkflowInput(terms=order, run=run, token=token).as_dict())
        self.orders.record_execution(order.order_id, run=run, execution_arn=end.arn)
        self.telemetry.decision(
            Decision.EXECUTION_ENDED,
            token=token,
            step="worker",
            execution=end.arn,
            status=end.status,
            started=end.started,
            stopped=end.stopped,
            error=end.error,
            cause=(end.cause or "")[:CAUSE_LOGGED_CHARS] or None,
        )
        if not end.succeeded:
            raise ExecutionFailed(end)
        return end.arn


@dataclass
class Reruns:
    """Operator actions on an order's runs (`python -m ops.rerun`): a new run, or a stranded
    order's message again (also on a schedule, the `sweep-accepted` function)."""

    orders: OrderStore
    queue: Queue

    def start_next_run(self, order_id: str) -> Order:
        """Run N+1 of an order whose run N ended FAILED: one conditional transition on the order
        (run == N and FAILED -> run N+1, ACCEPTED), then its message. Asked again after a crash
        between the two, it finds the order ACCEPTED on run N+1 and only sends the message again.
        A transition whose answer was lost is still this call's (the store recognises its own
        write); if run N+1 was started meanwhile (the sweeper sent its message), nothing is sent."""
        order = self.orders.get(order_id)
        if order is None:
            raise OrderNotFound(order_id)
        if order.status is not OrderStatus.ACCEPTED:
            order = self.orders.start_next_run(order_id, run=order.run)
        if order.status is OrderStatus.ACCEPTED:
            self.resend(order)
        return order

    def resend(self, order: Order) -> None:
        """The message of an ACCEPTED order's current run, again (the worker dedupes a duplicate)."""
        if order.status is not OrderStatus.ACCEPTED:
            raise RerunRefused(f"order {order.order_id} is {order.status.value}: its message was consumed")
        self.queue.send(OrderMessage(order.order_id, order.run, order.idempotency_key).as_dict())

    def resend_stranded(self, *, now: datetime, bound_seconds: int) -> list[Order]:
        """Re-send the message of every order still ACCEPTED `bound_seconds` after it was created
        (the API died between the order write and the send, and the client never retried).
        The bound is past the normal queue-to-start latency, so a healthy order is left alone; a
        duplicate of a message still on its way is harmless (the worker dedupes per order and run).
        Returns the orders re-sent."""
        stranded = self.orders.accepted_before((now - timedelta(seconds=bound_seconds)).isoformat())
        for order in stranded:
            self.resend(order)
        return stranded
