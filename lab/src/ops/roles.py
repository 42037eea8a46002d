"""The parts a step plays in a workflow, found from its declaration alone: the lab's tools (the
local crash points, the fault search's quick and control pairs, the scale model) aim at these
roles, never at a service's step by name.

- `provider_step`: the happy path's first leased step that calls a provider other than the
  service's own event fan-out, preferring one that reconciles (it finds a dead attempt's effect
  at the provider); None if there is none;
- `first_atomic_step`: the happy path's first atomic step;
- `events_step`: the step that publishes the service's events, if one does;
- `final_step`: the happy path's last step.

tests/unit/ops/test_roles.py shows the sample's and a transfer's.
"""

from __future__ import annotations

from reliability.declaration import Service, Step


def happy_steps(declared: Service) -> tuple[Step, ...]:
    return tuple(map(declared.step, declared.happy_path()))


def provider_step(declared: Service) -> Step | None:
    leased = [s for s in happy_steps(declared) if s.kind == "leased" and s.provider != declared.events]
    return next((s for s in leased if s.reconciles), leased[0] if leased else None)


def first_atomic_step(declared: Service) -> Step | None:
    return next((s for s in happy_steps(declared) if s.kind == "atomic"), None)


def events_step(declared: Service) -> Step | None:
    return next((s for s in happy_steps(declared) if s.provider == declared.events), None)


def final_step(declared: Service) -> Step:
    return happy_steps(declared)[-1]
