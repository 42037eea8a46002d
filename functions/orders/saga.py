"""The saga's step logic: one table of steps and ONE generic fenced runner.

Every step claims its fence (execution token, step name) before anything else:
- `AtomicStep`s are DynamoDB writes computed from the input: the effect, the step's status on the
  order and the fence completion commit in one transaction (`FenceStore.run_atomic`).
- `LeasedStep`s have an external effect (the payment provider, SQS): the fence is claimed with a
  lease and a fencing counter, the external system gets a key derived from (token, step) so it can
  dedupe, and completion is conditional on the counter (`FenceStore.run_leased`).
A fence skip returns the stored output; it is recorded on the order as SKIPPED (visible in
`GET /orders/{id}`), and reliability logs and counts it. A `BusinessError` (OutOfStock,
PaymentDeclined) marks the step FAILED and propagates, so the state machine's Catch compensates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orders.domain import Order, OrderStatus, StepName, StepStatus, WorkflowInput, completed_event
from orders.errors import PaymentDeclined, UnknownOrder
from orders.ports import Inventory, Ledger, OrderStore, PaymentProvider, Queue
from reliability.errors import BusinessError
from reliability.fence import AtomicEffect, ExternalEffect, FenceStore, Outcome, StepId, Write
from reliability.keys import derive_key

if TYPE_CHECKING:
    from orders.contract import Charge


@dataclass(frozen=True)
class StepRequest:
    """What a step handler hands the saga: the state machine's state and the attempt's budget."""

    state: Mapping[str, Any]
    attempt_id: str
    remaining_seconds: float

    @property
    def workflow(self) -> WorkflowInput:
        try:
            return WorkflowInput(
                order_id=str(self.state["order_id"]),
                run=int(self.state["run"]),
                token=str(self.state["token"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise UnknownOrder(f"step input lacks order_id/run/token: {error}") from error

    def result_of(self, step: StepName) -> Mapping[str, Any]:
        results = self.state.get("results") or {}
        return results.get(step.value) or {}


@dataclass(frozen=True)
class Effect:
    """A step's answer before it is fenced: its result and the writes that must commit with it."""

    result: dict[str, Any]
    writes: list[Write]


@dataclass
class SagaContext:
    """Everything a step may touch; built once per cold start by `orders.runtime`."""

    stage: str
    orders: OrderStore
    clock: Callable[[], datetime]
    inventory: Inventory | None = None
    payments: PaymentProvider | None = None
    ledger: Ledger | None = None
    notify_queue: Queue | None = None
    analytics_queue: Queue | None = None
    # How long the event consumers remember an event id: the "key lifetime" of PublishEvents.
    event_dedup_seconds: float | None = None

    def need(self, port: Any, name: str) -> Any:
        if port is None:
            raise RuntimeError(f"this function is not configured with {name}")
        return port


AtomicBuild = Callable[[SagaContext, Order, StepRequest], Effect]
LeasedRun = Callable[[SagaContext, Order, StepRequest, str], dict[str, Any]]
# Asks the external system whether an earlier attempt's effect happened (by a reference that
# never expires): its result, or None when it did not.
Reconcile = Callable[[SagaContext, Order, StepRequest], dict[str, Any] | None]
KeyLifetime = Callable[[SagaContext], float | None]


@dataclass(frozen=True)
class AtomicStep:
    name: StepName
    build: AtomicBuild


@dataclass(frozen=True)
class LeasedStep:
    """An external effect. A takeover calls `reconcile` first when the port offers a lookup;
    without one, `key_lifetime` (how long the external system dedupes the key) bounds how old an
    earlier attempt a takeover may repeat (`FenceStore.run_leased`)."""

    name: StepName
    run: LeasedRun
    reconcile: Reconcile | None = None
    key_lifetime: KeyLifetime | None = None


Step = AtomicStep | LeasedStep


# --- the steps' own logic ---------------------------------------------------------------------


def _reserve(ctx: SagaContext, order: Order, request: StepRequest) -> Effect:
    inventory: Inventory = ctx.need(ctx.inventory, "the inventory table")
    token = request.workflow.token
    return Effect(
        result={"reserved": {line.sku: line.quantity for line in order.lines}},
        writes=inventory.reserve_writes(order, token=token),
    )


def _charge_result(charge: Charge) -> dict[str, Any]:
    return {"charge_id": charge.charge_id, "amount_cents": charge.amount_cents, "currency": charge.currency}


def _charge(ctx: SagaContext, order: Order, request: StepRequest, external_key: str) -> dict[str, Any]:
    payments: PaymentProvider = ctx.need(ctx.payments, "the payment provider")
    charge = payments.charge(
        idempotency_key=external_key,
        order_id=order.order_id,
        customer_id=order.customer_id,
        amount_cents=order.total_cents,
        currency=order.currency,
        reference=request.workflow.token,
    )
    return _charge_result(charge)


def _find_charge(ctx: SagaContext, order: Order, request: StepRequest) -> dict[str, Any] | None:
    """The run's charge if an earlier attempt made it (searched by order id + token, which the
    provider never forgets, unlike the idempotency key); a found decline is the same decline."""
    payments: PaymentProvider = ctx.need(ctx.payments, "the payment provider")
    charge = payments.find_charge(order_id=order.order_id, reference=request.workflow.token)
    if charge is None:
        return None
    if charge.status != "SUCCEEDED":
        raise PaymentDeclined(f"payment declined: charge {charge.charge_id} is {charge.status}")
    return _charge_result(charge)


def _record_ledger(ctx: SagaContext, order: Order, request: StepRequest) -> Effect:
    ledger: Ledger = ctx.need(ctx.ledger, "the ledger table")
    charge_id = str(request.result_of(StepName.CHARGE_PAYMENT).get("charge_id", "unknown"))
    return Effect(
        result={"entry": f"entry#{request.workflow.token}", "amount_cents": order.total_cents},
        writes=ledger.entry_writes(order, token=request.workflow.token, charge_id=charge_id),
    )


def event_id_for(*, stage: str, order_id: str, run: int, event_type: str) -> str:
    """Stable across republishes: derived from (stage, order id, run, event type)."""
    return derive_key(event_type, stage=stage, identity=order_id, run=run).value


def _publish(ctx: SagaContext, order: Order, request: StepRequest, _external_key: str) -> dict[str, Any]:
    queues: list[Queue] = [
        ctx.need(ctx.notify_queue, "the notify queue"),
        ctx.need(ctx.analytics_queue, "the analytics queue"),
    ]
    workflow = request.workflow
    event = completed_event(
        order=order,
        run=workflow.run,
        event_id=event_id_for(
            stage=ctx.stage, order_id=order.order_id, run=workflow.run, event_type="OrderCompleted"
        ),
        occurred_at=ctx.clock(),
    )
    message_ids = [queue.send(event) for queue in queues]
    return {"event_id": event["event_id"], "messages": len(message_ids)}


def _finish(status: OrderStatus) -> AtomicBuild:
    def build(ctx: SagaContext, order: Order, request: StepRequest) -> Effect:
        result: dict[str, Any] = {"status": status.value}
        error = request.state.get("error")
        if isinstance(error, Mapping) and error.get("Error"):
            result["reason"] = str(error["Error"])
        return Effect(result=result, writes=[ctx.orders.status_write(order.order_id, status)])

    return build


def _release(ctx: SagaContext, order: Order, request: StepRequest) -> Effect:
    inventory: Inventory = ctx.need(ctx.inventory, "the inventory table")
    return Effect(
        result={"released": {line.sku: line.quantity for line in order.lines}},
        writes=[
            *inventory.release_writes(order, token=request.workflow.token),
            ctx.orders.step_write(order.order_id, StepName.RESERVE_INVENTORY, StepStatus.COMPENSATED),
        ],
    )


STEPS: dict[StepName, Step] = {
    StepName.RESERVE_INVENTORY: AtomicStep(StepName.RESERVE_INVENTORY, _reserve),
    StepName.CHARGE_PAYMENT: LeasedStep(StepName.CHARGE_PAYMENT, _charge, reconcile=_find_charge),
    StepName.RECORD_LEDGER: AtomicStep(StepName.RECORD_LEDGER, _record_ledger),
    # SQS has no lookup; a republish is harmless while the consumers still remember the event id.
    StepName.PUBLISH_EVENTS: LeasedStep(
        StepName.PUBLISH_EVENTS, _publish, key_lifetime=lambda ctx: ctx.event_dedup_seconds
    ),
    StepName.MARK_COMPLETED: AtomicStep(StepName.MARK_COMPLETED, _finish(OrderStatus.COMPLETED)),
    StepName.RELEASE_INVENTORY: AtomicStep(StepName.RELEASE_INVENTORY, _release),
    StepName.MARK_FAILED: AtomicStep(StepName.MARK_FAILED, _finish(OrderStatus.FAILED)),
}


# --- the one generic runner -------------------------------------------------------------------


def run_step(ctx: SagaContext, fences: FenceStore, name: StepName, request: StepRequest) -> dict[str, Any]:
    """Run one saga step behind its fence; return its result (stored result on a fence skip)."""
    step = STEPS[name]
    workflow = request.workflow
    order = ctx.orders.get(workflow.order_id)
    if order is None:
        raise UnknownOrder(f"no order {workflow.order_id!r}")
    fence = StepId(token=workflow.token, step=name.value)
    done = ctx.orders.step_write(order.order_id, name, StepStatus.DONE)
    outcome: Outcome
    try:
        if isinstance(step, AtomicStep):
            atomic = step

            def build() -> AtomicEffect:
                effect = atomic.build(ctx, order, request)
                return AtomicEffect(result=effect.result, writes=[*effect.writes, done])

            outcome = fences.run_atomic(fence, build)
        else:
            leased = step

            def external(external_key: str) -> dict[str, Any]:
                return leased.run(ctx, order, request, external_key)

            def reconcile() -> dict[str, Any] | None:
                return leased.reconcile(ctx, order, request) if leased.reconcile else None

            outcome = fences.run_leased(
                fence,
                attempt_id=request.attempt_id,
                lease_seconds=max(request.remaining_seconds, 1.0),
                effect=ExternalEffect(
                    external,
                    reconcile=reconcile if leased.reconcile else None,
                    key_lifetime_seconds=leased.key_lifetime(ctx) if leased.key_lifetime else None,
                ),
            )
            if not outcome.skipped:
                ctx.orders.record_step(order.order_id, name, StepStatus.DONE)
    except BusinessError:
        ctx.orders.record_step(order.order_id, name, StepStatus.FAILED)
        raise
    if outcome.skipped:
        ctx.orders.record_step(order.order_id, name, StepStatus.SKIPPED)
    return dict(outcome.result)
