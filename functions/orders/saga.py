"""The saga's step table and ONE generic fenced runner.

The steps are declared in `orders.workflow.STEPS` (data) and their effects live in
`orders.effects`; `steps()` resolves the declarations at cold start. Every step claims its fence
(execution token, step name) before anything else, and reads nothing else: the order's terms come
in the workflow state (`WorkflowInput`), and the fence record is the step's status
(`step_statuses`, what `GET /orders/{id}` shows).
- `AtomicStep`s are DynamoDB writes computed from the input: the effect and the fence commit in
  one transaction (`FenceStore.run_atomic`): 1 call, first run and replay. A step whose entry
  names a `record` has it on the business item its effect writes (`orders.items.record_at`):
  the write to that item carries it (`RecordOn`), no record in the fence table.
- `LeasedStep`s have an external effect (the payment provider, SQS): the fence is claimed with a
  lease and a fencing counter, the external system gets a key derived from (token, step) so it can
  dedupe, and completion is conditional on the counter (`FenceStore.run_leased`): claim + effect +
  complete on the first run, the refused claim alone on a replay.
A fence skip returns the stored output; reliability logs and counts it (`FenceSkipped`). A
`BusinessError` (OutOfStock, PaymentDeclined) is recorded FAILED on the fence and propagates, so
the state machine's Catch compensates.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from orders import items
from orders import workflow as declared
from orders.domain import OrderTerms, StepStatus, WorkflowInput
from orders.errors import UnknownOrder
from reliability import AtomicEffect, ExternalEffect, FenceState, FenceStore, RecordOn, StepId, Write

if TYPE_CHECKING:  # the ports are Protocols: annotations only, no module to load at run time
    from orders.ports import Inventory, Ledger, OrderStore, PaymentProvider, Queue

# The fence namespace of every saga step (docs/how-it-works.md, "Fences and step statuses").
SAGA_NAMESPACE = "saga"


@dataclass(frozen=True)
class StepRequest:
    """What a step handler hands the saga: the state machine's state and the attempt's budget."""

    state: Mapping[str, Any]
    attempt_id: str
    remaining_seconds: float

    @property
    def workflow(self) -> WorkflowInput:
        try:
            return WorkflowInput.from_state(self.state)
        except (KeyError, TypeError, ValueError) as error:
            raise UnknownOrder(f"step input is not a workflow input: {error!r}") from error

    def result_of(self, step: str) -> Mapping[str, Any]:
        """An earlier step's result (`step` must be a declared step: a typo fails loudly)."""
        results = self.state.get("results") or {}
        return results.get(declared.step(step).name) or {}


@dataclass(frozen=True)
class Effect:
    """A step's answer before it is fenced: its result and the writes that must commit with it."""

    result: dict[str, Any]
    writes: list[Write]


@dataclass
class SagaContext:
    """Everything a step may touch; built once per cold start by `orders.runtime`."""

    stage: str
    clock: Callable[[], datetime]
    orders: OrderStore | None = (
        None  # only the steps that declare the orders table (MarkCompleted/MarkFailed)
    )
    inventory: Inventory | None = None
    payments: PaymentProvider | None = None
    ledger: Ledger | None = None
    # Every consumer's queue (`orders.workflow.CONSUMERS`), for a step whose port is EVENTS.
    event_queues: list[Queue] = field(default_factory=list)
    # How long the event consumers remember an event id: the "key lifetime" of PublishEvents.
    event_dedup_seconds: float | None = None
    # The physical names of this function's tables, by short name (where a carried record is).
    tables: Mapping[str, str] = field(default_factory=dict)

    def need(self, port: Any, name: str) -> Any:
        if port is None:
            raise RuntimeError(f"this function is not configured with {name}")
        return port


AtomicBuild = Callable[[SagaContext, OrderTerms, StepRequest], Effect]
LeasedRun = Callable[[SagaContext, OrderTerms, StepRequest, str], dict[str, Any]]
# Asks the external system whether an earlier attempt's effect happened (by a reference that
# never expires): its result, or None when it did not.
Reconcile = Callable[[SagaContext, OrderTerms, StepRequest], dict[str, Any] | None]
KeyLifetime = Callable[[SagaContext], float | None]


@dataclass(frozen=True)
class AtomicStep:
    name: str
    build: AtomicBuild


@dataclass(frozen=True)
class LeasedStep:
    """An external effect. A takeover calls `reconcile` first when the port offers a lookup;
    without one, `key_lifetime` (how long the external system dedupes the key) bounds how old an
    earlier attempt a takeover may repeat (`FenceStore.run_leased`)."""

    name: str
    run: LeasedRun
    reconcile: Reconcile | None = None
    key_lifetime: KeyLifetime | None = None


Step = AtomicStep | LeasedStep


# --- the step table, from the declarations ----------------------------------------------------


def _resolve(path: str) -> Callable[..., Any]:
    module, _, attribute = path.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return function


def _event_dedup_seconds(ctx: SagaContext) -> float | None:
    return ctx.event_dedup_seconds


def _step(entry: declared.Step) -> Step:
    if entry.compensates:
        declared.step(entry.compensates)  # a typo fails the cold start, not a status read
    if entry.kind == "atomic":
        return AtomicStep(entry.name, _resolve(entry.effect))
    return LeasedStep(
        entry.name,
        _resolve(entry.effect),
        reconcile=_resolve(entry.reconcile) if entry.reconcile else None,
        # No lookup for events: a republish is harmless while the consumers remember the event id.
        key_lifetime=_event_dedup_seconds if declared.EVENTS in entry.ports else None,
    )


@cache
def steps() -> dict[str, Step]:
    """Every declared step with its effect resolved (once per process: the cold start)."""
    return {entry.name: _step(entry) for entry in declared.STEPS}


def step_statuses(states: Mapping[str, FenceState]) -> dict[str, StepStatus]:
    """Each step's status on a run, from its fence's state (by step name; absent: never ran):
    COMPLETED is DONE, FAILED is FAILED, and a completed compensation marks the step it undoes
    (`orders.workflow.Step.compensates`) COMPENSATED."""
    statuses: dict[str, StepStatus] = {}
    for entry in declared.STEPS:
        state = states.get(entry.name)
        if state is FenceState.COMPLETED:
            statuses[entry.name] = StepStatus.DONE
        elif state is FenceState.FAILED:
            statuses[entry.name] = StepStatus.FAILED
    for entry in declared.STEPS:
        if entry.compensates and statuses.get(entry.name) is StepStatus.DONE:
            statuses[entry.compensates] = StepStatus.COMPENSATED
    return statuses


def record_on(ctx: SagaContext, step: str, order_id: str, token: str) -> RecordOn | None:
    """The business item that carries `step`'s record on this run (`orders.items.record_at`), by
    its physical table; None when the record is in the fence table."""
    carrier = items.carrier_of(step)
    if carrier is None:
        return None
    if carrier.table not in ctx.tables:
        raise RuntimeError(f"this function is not configured with the {carrier.table} table")
    return RecordOn(ctx.tables[carrier.table], carrier.key(order_id, token))


# --- the one generic runner -------------------------------------------------------------------


def run_step(ctx: SagaContext, fences: FenceStore, name: str, request: StepRequest) -> dict[str, Any]:
    """Run one saga step behind its fence; return its result (stored result on a fence skip).

    The whole cost in AWS calls: an atomic step one transaction (first run and replay); a leased
    step claim + its effect + complete, and the refused claim alone on a replay."""
    step = steps()[name]
    workflow = request.workflow
    order = workflow.terms
    fence = StepId(token=workflow.token, step=name)
    if isinstance(step, AtomicStep):
        atomic = step

        def build() -> AtomicEffect:
            effect = atomic.build(ctx, order, request)
            return AtomicEffect(result=effect.result, writes=effect.writes)

        carrier = record_on(ctx, name, order.order_id, workflow.token)
        return dict(fences.run_atomic(fence, build, record_on=carrier).result)
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
    return dict(outcome.result)
