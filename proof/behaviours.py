"""The orders sample's mutants' old behaviours: its use cases as they were before a guard of its
own (`proof.mutants`), each injected at the function's composition root, never by a switch in
production code: an `orders.runtime.Runtime` whose use case behaves the old way. Loaded only by the
fault search, through the declaration's proof hook (`proof.mutants`).
"""

from __future__ import annotations

from dataclasses import fields
from functools import cached_property
from typing import Any

from orders.consumers import EventConsumer
from orders.contract import CreateOrderRequest, OrderAccepted, OrderView
from orders.domain import Order, OrderMessage, OrderStatus, WorkflowInput, execution_name, new_order
from orders.errors import RunNotCurrent
from orders.events import OrderCompletedEvent
from orders.runs import WorkflowStarter
from orders.runtime import Runtime
from orders.service import OrderService
from reliability import AtomicEffect
from reliability.http import ANONYMOUS, Headers, HttpIdempotency, HttpResponse
from reliability.keys import Fact, Key, execution_token
from reliability.workflow_runs import RunMessage


# --- 4 and 5: the use cases as they were ------------------------------------------------------
class ResendsOnlyWhenCreated(OrderService):
    """Issue 10's old `POST /orders`: a retry that finds its order stored answers it, and sends
    nothing (the message went out with the first request, or never)."""

    def place(
        self, request: CreateOrderRequest, *, stored_key: str, owner: str, status_base: str = ""
    ) -> OrderAccepted:
        catalog = self.catalog.lookup([item.sku for item in request.items])
        candidate = new_order(
            request=request, catalog=catalog, stored_idempotency_key=stored_key, owner=owner, now=self.clock()
        )
        order = self.orders.create(candidate)
        if order is candidate:
            self.queue.send(OrderMessage(order.order_id, order.run, order.idempotency_key).as_dict())
        return OrderAccepted(order_id=order.order_id, status_url=f"{status_base}/orders/{order.order_id}")


class StartsAnyRun(WorkflowStarter[Order]):
    """Issue 10's old worker: the message's run is taken as given, whatever the order's."""

    def start(self, message: RunMessage) -> str:
        order = self.store.get(message.entity_id)
        if order is None or message.run == order.run:
            return super().start(message)
        token = execution_token(stage=self.stage, business_id=message.entity_id, run=message.run)
        arn = self.workflow.start(
            name=execution_name(message.entity_id, message.run),
            payload=WorkflowInput(terms=order, run=message.run, token=token).as_dict(),
        )
        self.store.mark_running(message.entity_id, run=message.run, execution_arn=arn)
        return arn


def _as(kind: type[Any], real: Any) -> Any:
    """`real` (a dataclass use case) rebuilt as the mutant subclass `kind`, same collaborators."""
    return kind(**{f.name: getattr(real, f.name) for f in fields(real)})


class ApiWithoutResend(Runtime):
    """The composition root with issue 10's old `POST /orders`."""

    @cached_property
    def order_service(self) -> OrderService:
        return _as(ResendsOnlyWhenCreated, super().order_service)


class WorkerWithoutRunGuard(Runtime):
    """The composition root with issue 10's old worker."""

    @cached_property
    def workflow_starter(self) -> WorkflowStarter[Order]:
        return _as(StartsAnyRun, super().workflow_starter)


# --- whose key is it: the old behaviour of each root cause the outside review found --------------
class CallerBlindHttp(HttpIdempotency):
    """The old key: stage + route + the raw key, whoever sent it (every caller shares a key)."""

    def checked_key(self, *, route: str, caller: str, headers: Headers | None) -> Key | HttpResponse:  # noqa: ARG002 - the guard is the caller
        return super().checked_key(route=route, caller=ANONYMOUS, headers=headers)


class OwnerBlindService(OrderService):
    """The old `GET /orders/{id}`: any caller reads any order."""

    def view(self, order_id: str, *, caller: str) -> OrderView:
        order = self.orders.get(order_id)
        return super().view(order_id, caller=order.owner if order is not None else caller)


class ApiWithoutCallers(Runtime):
    """The composition root with the keys and orders of every caller in one namespace."""

    @cached_property
    def order_service(self) -> OrderService:
        return _as(OwnerBlindService, super().order_service)

    def http_idempotency(self) -> HttpIdempotency:
        real = super().http_idempotency()
        blind = CallerBlindHttp.__new__(CallerBlindHttp)
        blind.__dict__.update(real.__dict__)
        return blind


class PricesBeforeFinding(OrderService):
    """The old `POST /orders`: the retry is priced first, so a retry whose sku left the catalog
    is 422 UnknownSku for an order that exists."""

    def place(
        self, request: CreateOrderRequest, *, stored_key: str, owner: str, status_base: str = ""
    ) -> OrderAccepted:
        catalog = self.catalog.lookup([item.sku for item in request.items])
        order = self.orders.create(
            new_order(
                request=request,
                catalog=catalog,
                stored_idempotency_key=stored_key,
                owner=owner,
                now=self.clock(),
            )
        )
        if order.status is OrderStatus.ACCEPTED:
            self.queue.send(OrderMessage(order.order_id, order.run, order.idempotency_key).as_dict())
        return OrderAccepted(order_id=order.order_id, status_url=f"{status_base}/orders/{order.order_id}")


class ApiPricingFirst(Runtime):
    @cached_property
    def order_service(self) -> OrderService:
        return _as(PricesBeforeFinding, super().order_service)


class TrustsTheEvent(EventConsumer):
    """The old consumer: the event's own `event_id` is its identity, and whatever it names is
    applied (another stage's copy, a hand-made redrive, an order that does not exist)."""

    def verify(self, event: OrderCompletedEvent) -> None:  # noqa: ARG002 - the guard is the check
        return None

    def apply(self, event: OrderCompletedEvent) -> bool:
        fact = Fact(kind="event", subject=event.event_id)
        body = {**event.model_dump(mode="json"), "stage": self.dedup.stage}
        outcome = self.dedup.apply_atomic(
            fact,
            lambda: AtomicEffect(result={"order_id": event.order_id}, writes=self.effect(self.ports, body)),
        )
        return not outcome.skipped


class ConsumerTrustingEvents(Runtime):
    @cached_property
    def event_consumer(self) -> EventConsumer:
        return _as(TrustsTheEvent, super().event_consumer)


class EarlierRunIsPoison(WorkflowStarter[Order]):
    """The old worker: a late copy of an earlier run's message is `RunNotCurrent` (the DLQ and its
    alarm), though run N+1 began only once run N had ended: it is provably a duplicate."""

    def start(self, message: RunMessage) -> str:
        order = self.store.get(message.entity_id)
        if order is not None and message.run < order.run:
            raise RunNotCurrent(f"message run {message.run} is not order {order.order_id}'s run {order.run}")
        return super().start(message)


class WorkerPagingOnLateCopies(Runtime):
    @cached_property
    def workflow_starter(self) -> WorkflowStarter[Order]:
        return _as(EarlierRunIsPoison, super().workflow_starter)
