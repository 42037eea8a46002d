"""The service's capabilities as data: the saga's fenced steps, the API's routes, the consumers.

Adding a step is one effect function (plain Python, `orders.effects`) plus one `Step` below;
adding a consumer is one effect plus one `Consumer`; a route is one view plus one `Route` (then
`make openapi`: the edge is built from the document). Everything else follows from these lists:
the step's Lambda (handler, timeout, IAM and environment: infra/manifest.py), its place in the
state machine, the consumer's queue, DLQ, alarm and dedup namespace, the runtime's ports, the
simulator's and chaos's step maps (read back from the synthesized state machine) and the tests,
which iterate the lists.

Why this shape: a stdlib-only module of frozen dataclasses, with each effect named by its dotted
path (`module:function`). infra/ must not import runtime code (boto3, Powertools, pydantic), so it
loads this one file as data, the way it reads `openapi.json`; the runtime resolves the dotted paths
at cold start (`orders.saga.steps`, `orders.consumers`). A registry filled by decorators on the
effects would make infra import the effects; a naming convention would hide the link.
tests/unit/orders/test_workflow.py pins that this module imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# A step's port that is not a table: the OrderCompleted event, sent to every consumer's queue.
EVENTS = "events"
# The tables a step or consumer may name (infra/stacks/data.py creates them). Every fenced step
# also gets the fence table; a step gets the orders table only when it declares it (a step's
# status is its fence, so only the steps that set the order's status write the order).
TABLES = frozenset({"inventory", "payments", "ledger", "notifications", "aggregates", "orders"})
# A step's timeout is also its fence lease: a second invocation may take the fence over only
# after the first one can no longer be running.
STEP_TIMEOUT_SECONDS = 20
CONSUMER_TIMEOUT_SECONDS = 30


@dataclass(frozen=True, kw_only=True)
class Step:
    """One fenced task of the order workflow.

    `name` is the state name (PascalCase); the function is its kebab-case (`reserve-inventory`).
    `kind`: `atomic` (DynamoDB writes committed with the fence, effect `(ctx, order, request) ->
    Effect`) or `leased` (an external effect under a lease, effect `(ctx, order, request,
    external_key) -> dict`, optionally `reconcile` `(ctx, order, request) -> dict | None`).
    `ports`: the tables it writes besides fences (`orders` too, if it sets the order's status),
    or `EVENTS`; its grants and environment are these and nothing else.
    `next`: the state after it; by default the following entry, `None` ends the workflow.
    `catch`: state name -> the error names (exception class names) that route there.
    `compensates`: the step this one undoes; once it completes, that step shows COMPENSATED.
    `record`: where its fence record lives when not in the fence table: a kind of business item
    in `orders.items.CARRIERS` that its (atomic) effect writes exactly once per run; that item
    then carries the record (no TTL, one write instead of a transaction with a record). Only for
    an item no other step or run writes: `orders.items.record_at` is the map every reader uses.
    """

    name: str
    kind: Literal["atomic", "leased"]
    effect: str
    description: str
    ports: tuple[str, ...] = ()
    next: str | None = "following"
    catch: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reconcile: str | None = None
    compensates: str | None = None
    record: str | None = None
    timeout_seconds: int = STEP_TIMEOUT_SECONDS


@dataclass(frozen=True, kw_only=True)
class Consumer:
    """One consumer of the OrderCompleted event: `name` is its function, its queue (with a DLQ
    `<name>-dlq` and its alarm) and its dedup namespace; `effect` `(tables, event) -> writes`
    is applied exactly once per fact (the event's order, run and type in this stage, whatever
    `event_id` it carries), and only to an event verified against its order (orders.consumers);
    `tables` are the tables it writes (it also reads the orders table)."""

    name: str
    effect: str
    description: str
    tables: tuple[str, ...] = ()
    timeout_seconds: int = CONSUMER_TIMEOUT_SECONDS


@dataclass(frozen=True, kw_only=True)
class Route:
    """One operation of the REST API, served by the api function (orders.handlers.api), described
    in the OpenAPI document (orders.openapi) and built at the edge from that document.

    `view` (`module:function`) gets the path parameters as keyword arguments and returns the
    success body (a model of orders.contract) or a whole Powertools Response. `response` and
    `request` name orders.contract models (the success body; the JSON body, validated at the edge).
    `idempotent`: the Idempotency-Key header is required (a replay carries Idempotency-Replayed).
    `errors`: status -> the codes the view answers, besides those every operation may get.
    """

    method: str
    path: str
    operation_id: str
    view: str
    status: int
    description: str
    response: str
    request: str | None = None
    idempotent: bool = False
    errors: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """`METHOD /path`: the scope of an idempotent route's stored keys (`reliability.http`)."""
        return f"{self.method} {self.path}"


STEPS: tuple[Step, ...] = (
    Step(
        name="ReserveInventory",
        kind="atomic",
        effect="orders.effects:reserve_inventory",
        description="Workflow step: reserve stock (fenced)",
        ports=("inventory",),
        catch={"MarkFailed": ("OutOfStock",)},
        record="reservation",
    ),
    Step(
        name="ChargePayment",
        kind="leased",
        effect="orders.effects:charge_payment",
        reconcile="orders.effects:find_charge",
        description="Workflow step: charge the payment provider (fenced)",
        ports=("payments",),
        catch={"ReleaseInventory": ("PaymentDeclined",)},
    ),
    Step(
        name="RecordLedger",
        kind="atomic",
        effect="orders.effects:record_ledger",
        description="Workflow step: write ledger entries (fenced)",
        ports=("ledger",),
        record="ledger-entry",
    ),
    # SQS has no lookup; a republish is harmless while the consumers still remember the event id.
    Step(
        name="PublishEvents",
        kind="leased",
        effect="orders.effects:publish_events",
        description="Workflow step: fan OrderCompleted out to the consumer queues (fenced)",
        ports=(EVENTS,),
    ),
    # Its record stays in the fence table: the order item it writes is also MarkFailed's and every
    # run's (a record carried there would refuse the next run's and the other step's).
    Step(
        name="MarkCompleted",
        kind="atomic",
        effect="orders.effects:mark_completed",
        description="Workflow step: mark the order COMPLETED (fenced)",
        ports=("orders",),
        next=None,
    ),
    Step(
        name="ReleaseInventory",
        kind="atomic",
        effect="orders.effects:release_inventory",
        description="Compensation: release reserved stock (fenced)",
        ports=("inventory",),
        compensates="ReserveInventory",
    ),
    Step(
        name="MarkFailed",
        kind="atomic",
        effect="orders.effects:mark_failed",
        description="Compensation: mark the order FAILED (fenced)",
        ports=("orders",),
        next=None,
    ),
)

ROUTES: tuple[Route, ...] = (
    Route(
        method="POST",
        path="/orders",
        operation_id="createOrder",
        view="orders.handlers.api:create_order",
        status=202,
        description="accepted (or the stored answer replayed)",
        response="OrderAccepted",
        request="CreateOrderRequest",
        idempotent=True,
        errors={
            400: ("IdempotencyKeyMissing", "IdempotencyKeyInvalid", "MalformedBody"),
            # RequestInProgress: the first request with this key still runs.
            409: ("RequestInProgress",),
            415: ("UnsupportedMediaType",),
            # IdempotencyKeyReused: the key was used with another body (its order holds other
            # items, also once its record has expired); a retry with the same body gets its order.
            422: ("InvalidRequest", "UnknownSku", "IdempotencyKeyReused"),
        },
    ),
    Route(
        method="GET",
        path="/orders/{order_id}",
        operation_id="getOrder",
        view="orders.handlers.api:get_order",
        status=200,
        description="the order",
        response="OrderView",
        errors={404: ("OrderNotFound",)},
    ),
)

CONSUMERS: tuple[Consumer, ...] = (
    Consumer(
        name="notify",
        effect="orders.effects:notify",
        description="Notify queue consumer: sends one notification per event id",
        tables=("notifications",),
    ),
    Consumer(
        name="analytics",
        effect="orders.effects:count",
        description="Analytics queue consumer: counts each event id once in the daily aggregates",
        tables=("aggregates",),
    ),
)


def function_name(step_name: str) -> str:
    """`ReserveInventory` -> `reserve-inventory` (the function's name suffix)."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in step_name).lstrip("-")


def table_env(table: str) -> str:
    """The variable naming a table: `orders` -> ORDERS_TABLE, `fences` -> FENCE_TABLE."""
    return "FENCE_TABLE" if table == "fences" else f"{table.upper()}_TABLE"


def queue_env(queue: str) -> str:
    """The variable naming a queue's URL: `notify` -> NOTIFY_QUEUE_URL, `notify-dlq` -> NOTIFY_DLQ_URL."""
    base, dlq = (queue.removesuffix("-dlq"), True) if queue.endswith("-dlq") else (queue, False)
    return f"{base.upper().replace('-', '_')}_{'DLQ' if dlq else 'QUEUE'}_URL"


def next_of(step: Step) -> str | None:
    """Where `step` goes on success: its `next`, or the following entry by default."""
    if step.next != "following":
        return step.next
    names = [s.name for s in STEPS]
    index = names.index(step.name)
    if index + 1 == len(names):
        raise ValueError(f"{step.name} is the last step: give it next=None or a state name")
    return names[index + 1]


def happy_path() -> tuple[str, ...]:
    """The step names from the first entry to the end, following `next` (no catches)."""
    path = [STEPS[0].name]
    while (following := next_of(step(path[-1]))) is not None:
        path.append(following)
    return tuple(path)


def step(name: str) -> Step:
    for entry in STEPS:
        if entry.name == name:
            return entry
    raise KeyError(f"no step {name!r} in orders.workflow.STEPS")


def consumer(name: str) -> Consumer:
    for entry in CONSUMERS:
        if entry.name == name:
            return entry
    raise KeyError(f"no consumer {name!r} in orders.workflow.CONSUMERS")
