"""The service the operator tools work on: its declaration (`reliability.declaration.Service`).

Found by one setting, `[tool.retrysafe] service = "module:attribute"` in pyproject.toml (the
sample's is `orders.workflow:SERVICE`), so a service that replaces the sample points the tools at
its own declaration there and nowhere else. Every tool takes a `Service` argument and falls back
to `service()`; a test hands it a declaration of its own.

Beside the loader, what the tools derive from a declaration alone: where a step's record of a
run lives and the status it gives the step (the physical names are the stack outputs',
`ops.stack_outputs`).
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from reliability.declaration import FENCES, Service
from reliability.record import FenceState

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


class ServiceNotFound(LookupError):
    """The setting is missing or names something that is not a `Service`."""


@cache
def service(pyproject: Path = PYPROJECT) -> Service:
    """The declaration `[tool.retrysafe] service` names, imported once."""
    settings = tomllib.loads(pyproject.read_text()).get("tool", {}).get("retrysafe", {})
    path = settings.get("service")
    if not isinstance(path, str) or ":" not in path:
        raise ServiceNotFound(f'{pyproject}: set [tool.retrysafe] service = "module:attribute"')
    module, _, attribute = path.partition(":")
    declared = getattr(importlib.import_module(module), attribute, None)
    if not isinstance(declared, Service):
        raise ServiceNotFound(f"{path} is not a reliability.declaration.Service")
    return declared


# A service's invariants hook: (the table scans by short name, the per-order counts it fills) ->
# its violations over whole tables (`ops.invariants.rules.Counts` is the counts' shape).
DomainInvariants = Callable[[Callable[[str], list[dict[str, Any]]], Any], list[str]]


def domain_invariants(declared: Service) -> DomainInvariants:
    """The service's own invariants (`Service.invariants`, `module:function`): called once per check
    with the table scans and the per-order counts, it counts its effects and returns violations
    beside the generic rules'. None declared: no more than those."""
    if declared.invariants is None:
        return lambda _items, _counts: []
    module, _, attribute = declared.invariants.partition(":")
    hook: DomainInvariants = getattr(importlib.import_module(module), attribute)
    return hook


def record_at(
    declared: Service, step: str, *, entity_id: str, token: str, fence_id: str
) -> tuple[str, dict[str, Any]]:
    """(table short name, key) of `step`'s record on the run `token` of an entity: the fence table
    under its fence id, or the item the step declares as its `record` (`<prefix><token>` in the
    entity's partition). The sample's runtime reads the same place (orders.items.record_at)."""
    record = declared.step(step).record
    if record is None:
        return FENCES, {"id": {"S": fence_id}}
    pk = declared.entity.partition(entity_id)
    return record.table, {"pk": {"S": pk}, "sk": {"S": f"{record.prefix}{token}"}}


def record_tables(declared: Service) -> tuple[str, ...]:
    """Every table that holds step records: the fence table and the declared carriers' tables."""
    return (FENCES, *sorted({s.record.table for s in declared.steps if s.record is not None}))


def step_statuses(declared: Service, states: Mapping[str, str]) -> dict[str, str]:
    """Each declared step's status on a run from its record's state (`FenceState` values by step
    name; absent: never ran): COMPLETED is DONE, FAILED is FAILED, and a completed compensation
    marks the step it undoes COMPENSATED. The sample's GET /orders/{id} shows the same
    (`orders.saga.step_statuses`; a test holds the two equal)."""
    statuses: dict[str, str] = {}
    for step in declared.steps:
        state = states.get(step.name)
        if state == FenceState.COMPLETED:
            statuses[step.name] = "DONE"
        elif state == FenceState.FAILED:
            statuses[step.name] = "FAILED"
    for step in declared.steps:
        if step.compensates and statuses.get(step.name) == "DONE":
            statuses[step.compensates] = "COMPENSATED"
    return statuses
