"""The generic fenced step runner over a service's declaration (`reliability.declaration.Service`).

A service declares its steps (`Service.steps`: each effect named by its dotted path) and hands a
`Saga` three things of its own: how to read a run (`WorkflowRun`: the business id, the execution token
and the terms its effects get) from the workflow state, and, through its context object (any
type: every effect gets it), the physical names of its tables (where a carried record lives) and
how long its event consumers remember an event id (the key lifetime of a step whose port is the
service's events). The `Saga` resolves the steps at cold start (`steps`) and runs any of them
behind its fence (`run_step`); the fence records are the steps' statuses (`step_statuses`).

- An atomic step's effect `(ctx, terms, request) -> AtomicEffect` commits with its fence in one
  transaction (`FenceStore.run_atomic`): 1 call, first run and replay. A step whose entry names a
  `record` has it on the business item its effect writes (`record_on`: `<prefix><token>` under
  the entity's partition), no record in the fence table.
- A leased step's effect `(ctx, terms, request, external_key) -> dict` runs under a lease and a
  fencing counter (`FenceStore.run_leased`): claim + effect + complete on the first run, the
  refused claim alone on a replay. A takeover calls its `reconcile` first when declared; without
  one, the key lifetime bounds how old an earlier attempt a takeover may repeat.

A fence skip returns the stored result. A `BusinessError` is recorded FAILED and propagates, so
the state machine's Catch routes it.

The statuses themselves (`StepStatus`) are the declaration's vocabulary, stdlib only, so a
service's contract names them without loading this runner (cold start: bench/coldstart.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from reliability.declaration import StepStatus
from reliability.effects import AtomicEffect, ExternalEffect, RecordOn
from reliability.keys import SAGA_NAMESPACE as SAGA_NAMESPACE  # noqa: PLC0414 - re-export
from reliability.record import FenceState, StepId
from reliability.runs import FenceStore  # at run time: a step function loads it at its cold start

if TYPE_CHECKING:
    from reliability.declaration import Service, Step


Context = TypeVar("Context")
Terms = TypeVar("Terms")


@dataclass(frozen=True)
class WorkflowRun(Generic[Terms]):
    """What the runner reads from the workflow state: the business entity's id, the run's
    execution token (the fences' key), and the terms the effects get."""

    entity_id: str
    token: str
    terms: Terms


@dataclass(frozen=True)
class StepRequest:
    """What a step handler hands the runner: the state machine's state and the attempt's budget.

    `service`: set by the runner (or the service's own subclass), so `result_of` refuses a step
    name the declaration does not have."""

    state: Mapping[str, Any]
    attempt_id: str
    remaining_seconds: float
    service: Service | None = None

    def result_of(self, step: str) -> Mapping[str, Any]:
        """An earlier step's result (`step` must be a declared step: a typo fails loudly)."""
        if self.service is not None:
            self.service.step(step)
        results = self.state.get("results") or {}
        found: Mapping[str, Any] = results.get(step) or {}
        return found


AtomicBuild = Callable[[Any, Any, StepRequest], AtomicEffect]
LeasedRun = Callable[[Any, Any, StepRequest, str], dict[str, Any]]
# Asks the external system whether an earlier attempt's effect happened (by a reference that
# never expires): its result, or None when it did not.
Reconcile = Callable[[Any, Any, StepRequest], dict[str, Any] | None]
KeyLifetime = Callable[[Any], float | None]


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


def resolve(path: str) -> Callable[..., Any]:
    """The function a declaration names by its dotted path `module:function`."""
    module, _, attribute = path.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return function


class Saga(Generic[Context, Terms]):
    """One service's steps, resolved from its declaration, and the one runner for all of them.

    `read_run(state)`: the run a workflow state carries (it raises the service's own error on a
    state that is not one). `tables(ctx)`: the physical table names by short name, where a
    carried record is (None: the service declares no carried record). `event_key_lifetime(ctx)`:
    how long the consumers remember an event id, the key lifetime of a step whose port is the
    service's events (SQS has no lookup; a republish is harmless while they remember it)."""

    def __init__(
        self,
        service: Service,
        read_run: Callable[[Mapping[str, Any]], WorkflowRun[Terms]],
        *,
        tables: Callable[[Context], Mapping[str, str]] | None = None,
        event_key_lifetime: Callable[[Context], float | None] | None = None,
    ) -> None:
        self.service = service
        self.read_run = read_run
        self.tables = tables
        self.event_key_lifetime = event_key_lifetime
        self._steps: dict[str, AtomicStep | LeasedStep] | None = None

    # --- the step table, from the declaration -------------------------------------------------

    def _step(self, entry: Step) -> AtomicStep | LeasedStep:
        if entry.compensates:
            self.service.step(entry.compensates)  # a typo fails the cold start, not a status read
        if entry.kind == "atomic":
            return AtomicStep(entry.name, resolve(entry.effect))
        return LeasedStep(
            entry.name,
            resolve(entry.effect),
            reconcile=resolve(entry.reconcile) if entry.reconcile else None,
            key_lifetime=self.event_key_lifetime if self.service.events in entry.ports else None,
        )

    def steps(self) -> dict[str, AtomicStep | LeasedStep]:
        """Every declared step with its effect resolved (once per process: the cold start)."""
        if self._steps is None:
            self._steps = {entry.name: self._step(entry) for entry in self.service.steps}
        return self._steps

    def step_statuses(self, states: Mapping[str, FenceState]) -> dict[str, StepStatus]:
        """Each step's status on a run, from its fence's state (`Service.step_statuses`)."""
        return self.service.step_statuses(states)

    def record_on(self, ctx: Context, step: str, entity_id: str, token: str) -> RecordOn | None:
        """The business item that carries `step`'s record on this run (`<prefix><token>` under
        the entity's partition), by its physical table; None when the record is in the fence table."""
        record = self.service.step(step).record
        if record is None:
            return None
        tables = self.tables(ctx) if self.tables is not None else {}
        if record.table not in tables:
            raise RuntimeError(f"this function is not configured with the {record.table} table")
        key = {"pk": {"S": self.service.entity.partition(entity_id)}, "sk": {"S": f"{record.prefix}{token}"}}
        return RecordOn(tables[record.table], key)

    # --- the one generic runner ---------------------------------------------------------------

    def run_step(self, ctx: Context, fences: FenceStore, name: str, request: StepRequest) -> dict[str, Any]:
        """Run one step behind its fence; return its result (stored result on a fence skip).

        The whole cost in AWS calls: an atomic step one transaction (first run and replay); a
        leased step claim + its effect + complete, and the refused claim alone on a replay."""
        step = self.steps()[name]
        if request.service is None:
            request = replace(request, service=self.service)
        run = self.read_run(request.state)
        fence = StepId(token=run.token, step=name)
        if isinstance(step, AtomicStep):
            build = step.build
            carrier = self.record_on(ctx, name, run.entity_id, run.token)
            outcome = fences.run_atomic(fence, lambda: build(ctx, run.terms, request), record_on=carrier)
            return dict(outcome.result)
        leased = step

        def external(external_key: str) -> dict[str, Any]:
            return leased.run(ctx, run.terms, request, external_key)

        def reconcile() -> dict[str, Any] | None:
            return leased.reconcile(ctx, run.terms, request) if leased.reconcile else None

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
