"""What each step and consumer of `orders.workflow` does: plain functions over the ports.

A step's effect knows nothing of fences, Lambda or the state machine (`orders.saga.run_step` fences
it); a consumer's effect returns the writes to commit with its dedup record (`orders.consumers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from orders.domain import ChargeRecord, OrderStatus, OrderTerms, completed_event
from orders.errors import PaymentDeclined
from orders.saga import Effect, SagaContext, StepRequest
from reliability import Write

if TYPE_CHECKING:
    from orders.ports import Aggregates, Inventory, Ledger, Notifications, PaymentProvider  # Protocols

# --- steps ------------------------------------------------------------------------------------


def reserve_inventory(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    inventory: Inventory = ctx.need(ctx.inventory, "the inventory table")
    return Effect(
        result={"reserved": {line.sku: line.quantity for line in order.lines}},
        writes=inventory.reserve_writes(order, token=request.workflow.token),
    )


def _charge_result(charge: ChargeRecord) -> dict[str, Any]:
    return {"charge_id": charge.charge_id, "amount_cents": charge.amount_cents, "currency": charge.currency}


def charge_payment(
    ctx: SagaContext, order: OrderTerms, request: StepRequest, external_key: str
) -> dict[str, Any]:
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


def find_charge(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> dict[str, Any] | None:
    """The run's charge if an earlier attempt made it (searched by order id + token, which the
    provider never forgets, unlike the idempotency key); a found decline is the same decline."""
    payments: PaymentProvider = ctx.need(ctx.payments, "the payment provider")
    charge = payments.find_charge(order_id=order.order_id, reference=request.workflow.token)
    if charge is None:
        return None
    if charge.status != "SUCCEEDED":
        raise PaymentDeclined(f"payment declined: charge {charge.charge_id} is {charge.status}")
    return _charge_result(charge)


def record_ledger(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    ledger: Ledger = ctx.need(ctx.ledger, "the ledger table")
    charge_id = str(request.result_of("ChargePayment").get("charge_id", "unknown"))
    return Effect(
        result={"entry": f"entry#{request.workflow.token}", "amount_cents": order.total_cents},
        writes=ledger.entry_writes(order, token=request.workflow.token, charge_id=charge_id),
    )


def publish_events(
    ctx: SagaContext, order: OrderTerms, request: StepRequest, _external_key: str
) -> dict[str, Any]:
    """OrderCompleted to every consumer's queue (`orders.workflow.CONSUMERS`)."""
    if not ctx.event_queues:
        raise RuntimeError("this function is not configured with the consumers' queues")
    event = completed_event(stage=ctx.stage, order=order, run=request.workflow.run, occurred_at=ctx.clock())
    message_ids = [queue.send(event) for queue in ctx.event_queues]
    return {"event_id": event["event_id"], "messages": len(message_ids)}


def _finish(ctx: SagaContext, order: OrderTerms, request: StepRequest, status: OrderStatus) -> Effect:
    result: dict[str, Any] = {"status": status.value}
    error = request.state.get("error")
    if isinstance(error, Mapping) and error.get("Error"):
        result["reason"] = str(error["Error"])
    return Effect(
        result=result, writes=[ctx.need(ctx.orders, "the orders table").status_write(order.order_id, status)]
    )


def mark_completed(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    return _finish(ctx, order, request, OrderStatus.COMPLETED)


def mark_failed(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    return _finish(ctx, order, request, OrderStatus.FAILED)


def release_inventory(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    inventory: Inventory = ctx.need(ctx.inventory, "the inventory table")
    return Effect(
        result={"released": {line.sku: line.quantity for line in order.lines}},
        writes=inventory.release_writes(order, token=request.workflow.token),
    )


# --- consumers --------------------------------------------------------------------------------


class ConsumerPorts(Protocol):
    """What a consumer may write (`orders.runtime.Runtime` builds each on first use): the adapters
    of the existing consumers, or the physical name of a table it declared, for its own items."""

    @property
    def notifications(self) -> Notifications: ...

    @property
    def aggregates(self) -> Aggregates: ...

    def table_name(self, table: str) -> str: ...


def notify(ports: ConsumerPorts, event: Mapping[str, Any]) -> list[Write]:
    """One notification per order (per event id)."""
    return ports.notifications.notification_writes(event)


def count(ports: ConsumerPorts, event: Mapping[str, Any]) -> list[Write]:
    """The daily aggregate: an ADD, made exactly-once by the dedup record it commits with."""
    return ports.aggregates.count_writes(event)
