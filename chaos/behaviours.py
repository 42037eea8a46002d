"""Mutants of guards that are not one request's condition: a use case's rule, a setting synth
checks, the workflow's Retry list, a schedule, the transaction that binds an effect to its fence.

Five of them bring back what issue 10 ("Exactly once past the crash") fixed, each the old code's
behaviour (`ISSUE10`). Each is injected where the app is composed, never by a switch in
production code:
- a request rewrite on the function's clients (`chaos.mutants.instrument`), or
- the synthesized template as synth would emit it without the guard, edited before the world
  deploys it (what `infra` checks or builds: TTLs, the Retry list, the sweeper's schedule), or
- the function's composition root: an `orders.runtime.Runtime` whose use case behaves the old way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import fields
from functools import cached_property
from typing import Any

from botocore.exceptions import ClientError

from chaos.audit import is_fence
from orders.consumers import EventConsumer
from orders.contract import CreateOrderRequest, OrderAccepted, OrderView
from orders.domain import Order, OrderMessage, OrderStatus, WorkflowInput, execution_name, new_order
from orders.errors import RunNotCurrent
from orders.events import OrderCompletedEvent
from orders.runs import WorkflowStarter
from orders.runtime import Runtime
from orders.service import OrderService
from reliability import AtomicEffect
from reliability.calltoken import CallToken
from reliability.http import ANONYMOUS, Headers, HttpIdempotency, HttpResponse
from reliability.keys import Fact, Key, execution_token
from reliability.workflow_runs import RunMessage

Params = dict[str, Any]
Template = dict[str, Any]

ISSUE10 = {
    1: "1: a TTL shorter than its window (a late redrive re-notifies, a late restart repeats a step)",
    2: "2: a takeover past the provider's key lifetime charges again without reconciling",
    3: "3: a transient error is not retried (TransientError not in the Retry list)",
    4: "4: a stranded ACCEPTED order: a retry does not re-send its message, no sweeper",
    5: "5: runs not guarded: a run N+1 message starts a second run of a running or completed order",
}
# Shorter than the 14-day redrive and DLQ windows (infra/config.py) that synth makes them outlive.
SHORT_TTL_SECONDS = 7 * 86_400


# --- the transactional effect + fence ---------------------------------------------------------
_splitting = threading.local()


def split_effect_from_fence(_function: str, operation: str, params: Params, client: Any = None) -> bool:
    """`run_atomic` as two writes: the effect first (its own transaction, with its own crash
    points), then the COMPLETED record. A condition the effect fails is reported as the one
    transaction would (the fence's entry first)."""
    if operation != "TransactWriteItems" or client is None or getattr(_splitting, "active", False):
        return False
    entries = params.get("TransactItems", [])
    fence = [e for e in entries if is_fence((e.get("Put") or {}).get("Item"))]
    effect = [e for e in entries if e not in fence]
    if not fence or not effect:
        return False
    _splitting.active = True
    try:
        client.transact_write_items(TransactItems=effect)
    except ClientError as error:
        reasons = error.response.get("CancellationReasons")
        if reasons is not None:
            error.response["CancellationReasons"] = [{"Code": "None"}, *reasons]
        raise
    finally:
        _splitting.active = False
    params["TransactItems"] = fence
    return True


# --- 2: reconcile before a takeover repeats ---------------------------------------------------
def provider_finds_nothing(_function: str, operation: str, params: Params, parsed: dict[str, Any]) -> None:
    """The takeover's lookup (`PaymentProvider.find_charge`: every charge of the order, by its
    metadata) answers nothing, so the takeover charges as if no earlier attempt had."""
    values = params.get("ExpressionAttributeValues") or {}
    if operation == "Query" and values.get(":prefix") == {"S": "charge#"}:
        parsed["Items"], parsed["Count"] = [], 0


# --- 1, 3, 4: what synth would emit without the guard -----------------------------------------
def short_ttls(template: Template) -> None:
    """Every fence and dedup TTL a week: shorter than the windows synth checks them against."""
    for function in _resources(template, "AWS::Lambda::Function"):
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        for name in ("FENCE_TTL_SECONDS", "DEDUP_TTL_SECONDS"):
            if name in variables:
                variables[name] = str(SHORT_TTL_SECONDS)


def no_transient_retry(template: Template) -> None:
    """The workflow's Retry lists without `TransientError`."""
    for machine in _resources(template, "AWS::StepFunctions::StateMachine"):
        definition = machine["Properties"]["DefinitionString"]
        machine["Properties"]["DefinitionString"] = _map_strings(
            definition, lambda s: s.replace(',\\"TransientError\\"', "").replace(',"TransientError"', "")
        )


def no_sweeper(template: Template) -> None:
    """No scheduled sweep of stranded ACCEPTED orders."""
    resources = template["Resources"]
    for logical in [k for k, v in resources.items() if v["Type"] == "AWS::Events::Rule"]:
        del resources[logical]


def _resources(template: Template, kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, change) for k, v in value.items()}
    return value


def both(*edits: Callable[[Template], None]) -> Callable[[Template], None]:
    def edit(template: Template) -> None:
        for one in edits:
            one(template)

    return edit


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


def forget_own_write(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
    """The old conditional UpdateItem: it carries no token of its own call, so the SDK's resend of
    a write that landed fails its condition and is taken for another writer's (`make rerun`
    answered RerunRefused for the run it had just begun)."""
    expression = params.get("UpdateExpression", "")
    if operation != "UpdateItem" or ":attempt" not in params.get("ExpressionAttributeValues", {}):
        return False
    params["UpdateExpression"] = expression.replace(f", {CallToken.SET}", "").replace(
        f"{CallToken.SET}, ", ""
    )
    params.get("ExpressionAttributeNames", {}).pop("#attempt", None)
    params["ExpressionAttributeValues"].pop(":attempt", None)
    return True


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
