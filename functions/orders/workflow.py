"""The orders service's declaration: its entity, tables, the saga's fenced steps, the API's routes,
the consumers, and each entry's declared effect, gathered in `SERVICE`.

Adding a step is one effect function (plain Python, `orders.effects`) plus one `Step` below;
adding a consumer is one effect plus one `Consumer`; a route is one view plus one `Route` (then
`make openapi`: the edge is built from the document). Everything else follows from these lists:
the step's Lambda (handler, timeout, IAM and environment: infra/manifest.py), its place in the
state machine, the consumer's queue, DLQ, alarm and dedup namespace, the runtime's ports, the
simulator's and chaos's step maps (read back from the synthesized state machine), the operator
tools (`ops.service` loads `SERVICE`, named in pyproject.toml's [tool.retrysafe]) and the tests,
which iterate the lists.

Why this shape: the types are the library's (`reliability.declaration`: frozen stdlib dataclasses,
each effect named by its dotted path `module:function`). infra/ must not import runtime code
(boto3, Powertools, pydantic), so it loads this one file as data, the way it reads `openapi.json`;
the runtime resolves the dotted paths at cold start (`orders.saga.steps`, `orders.consumers`).
A registry filled by decorators on the effects would make infra import the effects; a naming
convention would hide the link. tests/unit/orders/test_workflow.py pins that this module imports
only the standard library and `reliability.declaration`.
"""

from __future__ import annotations

from reliability.declaration import (
    CONSUMER_TIMEOUT_SECONDS,
    EVENTS,
    STEP_TIMEOUT_SECONDS,
    Consumer,
    Entity,
    Item,
    Route,
    Service,
    Step,
    function_name,
    queue_env,
    table_env,
)

__all__ = [
    "CONSUMERS",
    "CONSUMER_TIMEOUT_SECONDS",
    "EVENTS",
    "ROUTES",
    "SERVICE",
    "STEPS",
    "STEP_TIMEOUT_SECONDS",
    "TABLES",
    "Consumer",
    "Route",
    "Step",
    "consumer",
    "function_name",
    "happy_path",
    "next_of",
    "queue_env",
    "step",
    "table_env",
]

# The tables a step or consumer may name (infra/stacks/data.py creates them). Every fenced step
# also gets the fence table; a step gets the orders table only when it declares it (a step's
# status is its fence, so only the steps that set the order's status write the order).
TABLES = frozenset({"inventory", "payments", "ledger", "notifications", "aggregates", "orders"})

STEPS: tuple[Step, ...] = (
    Step(
        name="ReserveInventory",
        kind="atomic",
        effect="orders.effects:reserve_inventory",
        description="Workflow step: reserve stock (fenced)",
        ports=("inventory",),
        catch={"MarkFailed": ("OutOfStock",)},
        record=Item("inventory", "reservation#"),
        writes=(Item("inventory", "reservation#"),),
    ),
    Step(
        name="ChargePayment",
        kind="leased",
        effect="orders.effects:charge_payment",
        reconcile="orders.effects:find_charge",
        description="Workflow step: charge the payment provider (fenced)",
        ports=("payments",),
        catch={"ReleaseInventory": ("PaymentDeclined",)},
        provider="payments",
    ),
    Step(
        name="RecordLedger",
        kind="atomic",
        effect="orders.effects:record_ledger",
        description="Workflow step: write ledger entries (fenced)",
        ports=("ledger",),
        record=Item("ledger", "entry#"),
        writes=(Item("ledger", "entry#"),),
    ),
    # SQS has no lookup; a republish is harmless while the consumers still remember the event id.
    Step(
        name="PublishEvents",
        kind="leased",
        effect="orders.effects:publish_events",
        description="Workflow step: fan OrderCompleted out to the consumer queues (fenced)",
        ports=(EVENTS,),
        provider=EVENTS,
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
        status="COMPLETED",
    ),
    Step(
        name="ReleaseInventory",
        kind="atomic",
        effect="orders.effects:release_inventory",
        description="Compensation: release reserved stock (fenced)",
        ports=("inventory",),
        compensates="ReserveInventory",
        writes=(Item("inventory", "release#"),),
    ),
    Step(
        name="MarkFailed",
        kind="atomic",
        effect="orders.effects:mark_failed",
        description="Compensation: mark the order FAILED (fenced)",
        ports=("orders",),
        next=None,
        status="FAILED",
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
        writes=(Item("notifications", "notification#"),),
    ),
    Consumer(
        name="analytics",
        effect="orders.effects:count",
        description="Analytics queue consumer: counts each event id once in the daily aggregates",
        tables=("aggregates",),
        writes=(Item("aggregates", "marker"),),
    ),
)


SERVICE = Service(
    name="orders",
    entity=Entity(name="order", id_prefix="o-", table="orders"),
    tables=TABLES,
    queue="orders",
    steps=STEPS,
    routes=ROUTES,
    consumers=CONSUMERS,
    events=EVENTS,
    # Its hooks for the lab: its own invariants (amounts agree, stock conserved), its catalog seed
    proof="proof",
    runtime="orders.runtime",
)

# The declaration's lookups, bound to this service (what infra/manifest.py and the runtime call).
step = SERVICE.step
consumer = SERVICE.consumer
next_of = SERVICE.next_of
happy_path = SERVICE.happy_path
