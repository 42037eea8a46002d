"""What the demo plays, derived from the service's declaration and read from its proof: the
outcomes (`ops.outcomes`: the happy path, one per catch route), the routes, the step a crash is
armed in, and the proof's hooks (`request`, and for what a client cannot see: `observe`,
`provider_effects`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ops.outcomes import (
    Outcome,
    RequestFactory,
    entity_route,
    id_field,
    outcomes,
    request_factory,
    starting_route,
)
from ops.service import proof, service
from reliability.declaration import Route, Service, Step, function_name

Observe = Callable[[Any, Mapping[str, str], Any], Any]


@dataclass(frozen=True)
class Plan:
    service: Service
    outcomes: tuple[Outcome, ...]
    starting: Route
    reading: Route
    id_field: str
    request: RequestFactory
    # the stock, balance, ... a request's effects touch (None: the proof shows none)
    observe_hook: Observe | None = None
    provider_effects: Callable[[Mapping[str, Any]], tuple[int, int]] | None = None

    @classmethod
    def of(cls, declared: Service) -> Plan:
        reading = entity_route(declared)
        if reading is None:
            raise ValueError(
                f"service {declared.name!r} declares no GET of its entity by id: nothing to follow"
            )
        hooks = proof(declared)
        return cls(
            declared,
            outcomes(declared),
            starting_route(declared),
            reading,
            id_field(declared),
            request_factory(declared),
            getattr(hooks, "observe", None),
            getattr(hooks, "provider_effects", None),
        )

    @property
    def happy(self) -> Outcome:
        return self.outcomes[0]

    @property
    def catches(self) -> tuple[Outcome, ...]:
        return self.outcomes[1:]

    @property
    def final(self) -> frozenset[str]:
        """The statuses a run ends in."""
        return frozenset(o.status for o in self.outcomes if o.status is not None)

    def read_path(self, entity_id: str) -> str:
        return self.reading.path.replace("{" + self.id_field + "}", entity_id)

    def observe(self, dynamodb: Any, tables: Mapping[str, str], body: Any) -> Any:
        return None if self.observe_hook is None else self.observe_hook(dynamodb, tables, body)

    def compensated(self, outcome: Outcome) -> dict[str, str]:
        """Step -> the step that undoes it, for each step the outcome runs and then undoes."""
        ran = set(outcome.steps)
        return {s.compensates: s.name for s in map(self.service.step, outcome.steps) if s.compensates in ran}

    @property
    def crash_step(self) -> Step:
        """Where the crash is armed: the happy path's first leased step that reconciles (it finds
        a dead attempt's effect at the provider), else its first leased step."""
        leased = [s for s in map(self.service.step, self.happy.steps) if s.kind == "leased"]
        if not leased:
            raise ValueError(f"service {self.service.name!r}: no leased step on the happy path to crash in")
        return next((s for s in leased if s.reconciles), leased[0])

    @property
    def first_step(self) -> str:
        return self.happy.steps[0]

    def crash_spec(self, times: int) -> str:
        """The local cloud's crash point: right after the crash step's effect, `times` times."""
        step = self.crash_step.name
        return f"fence:after-effect:{step}@{function_name(step)}={times}"


PLAN = Plan.of(service())
