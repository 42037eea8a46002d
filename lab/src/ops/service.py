"""The service the operator tools work on: its declaration (`reliability.declaration.Service`).

Found by one setting, `[tool.retrysafe] service = "module:attribute"` in the project's
pyproject.toml (`emulator.project`: the sample's is `orders.workflow:SERVICE`), so a service
that replaces the sample points the tools at its own declaration there and nowhere else. Every
tool takes a `Service` argument and falls back to `service()`; a test hands it a declaration of
its own.

Beside the loader, what the tools derive from a declaration alone: where a step's record of a
run lives and the status it gives the step (the physical names are the stack outputs',
`ops.stack_outputs`).
"""

from __future__ import annotations

import importlib
import json
import tomllib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from emulator import project
from reliability.declaration import FENCES, Service


def _pyproject() -> Path:
    return project.root() / "pyproject.toml"


class ServiceNotFound(LookupError):
    """The setting is missing or names something that is not a `Service`."""


@cache
def service(pyproject: Path | None = None) -> Service:
    """The declaration `[tool.retrysafe] service` names, imported once."""
    pyproject = pyproject or _pyproject()
    settings = tomllib.loads(pyproject.read_text()).get("tool", {}).get("retrysafe", {})
    path = settings.get("service")
    if not isinstance(path, str) or ":" not in path:
        raise ServiceNotFound(f'{pyproject}: set [tool.retrysafe] service = "module:attribute"')
    module, _, attribute = path.partition(":")
    declared = getattr(importlib.import_module(module), attribute, None)
    if not isinstance(declared, Service):
        raise ServiceNotFound(f"{path} is not a reliability.declaration.Service")
    return declared


def openapi_path(pyproject: Path | None = None) -> Path:
    """The service's published OpenAPI document: `openapi.json` beside its declaration's module
    (`make openapi` writes it there)."""
    settings = tomllib.loads((pyproject or _pyproject()).read_text()).get("tool", {}).get("retrysafe", {})
    module = importlib.import_module(str(settings.get("service", "")).partition(":")[0])
    return Path(str(module.__file__)).with_name("openapi.json")


def openapi_document(pyproject: Path | None = None) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(openapi_path(pyproject).read_text())
    return document


def composition_root(declared: Service) -> ModuleType:
    """The service's runtime module (`Service.runtime`), imported once: its `Runtime` (a
    `reliability.runtime.Runtime` with the service's ports) and `RUNTIMES` (its `Runtimes`), what
    an in-process cloud builds per function and scopes around each invocation."""
    if declared.runtime is None:
        raise ServiceNotFound(
            f"service {declared.name!r} declares no runtime: set Service(runtime=...) to the module "
            "of its Runtime and RUNTIMES"
        )
    return importlib.import_module(declared.runtime)


def proof(declared: Service) -> ModuleType | None:
    """The service's module of hooks for the lab (`Service.proof`), imported once; None if none."""
    return None if declared.proof is None else importlib.import_module(declared.proof)


# The hooks a proof module may define (each optional):
# `violations(items, counts)`: (the table scans by short name, the per-entity counts it fills) ->
# its violations over whole tables (`ops.invariants.effects.Counts` is the counts' shape); the
# entries whose effects it counts itself (a provider's calls, an item laid out its own way) are
# its `COUNTS` (`hook_counts`), which the generic count leaves to it.
DomainInvariants = Callable[[Callable[[str], list[dict[str, Any]]], Any], list[str]]


# `seed(dynamodb, tables, reset=)`: writes the reference data its workflow needs into its tables
# (physical names by short name) and returns how many items it wrote.
class SeedHook(Protocol):
    def __call__(self, dynamodb: Any, tables: Mapping[str, str], *, reset: bool = False) -> int: ...


def domain_invariants(declared: Service) -> DomainInvariants:
    """The service's own invariants (its proof's `violations`): called once per check with the
    table scans and the per-entity counts, it counts its effects and returns violations beside the
    generic rules'. None declared: no more than those."""
    hook: DomainInvariants | None = getattr(proof(declared), "violations", None)
    return hook or (lambda _items, _counts: [])


def hook_counts(declared: Service) -> frozenset[str]:
    """The steps and consumers whose effects the service's `violations` hook counts (its proof's
    `COUNTS`); none declared: the generic count reads every declared item."""
    return frozenset(getattr(proof(declared), "COUNTS", ()))


def service_mutants(declared: Service, derived: tuple[Any, ...]) -> tuple[Any, ...]:
    """The mutants of the service: the library's guards and those the fault search derives from
    its declaration, as its proof's `mutants(derived)` returns them (it may declare some
    equivalent, saying why, and add its own: `chaos.mutant.Mutant`s of the guards that are its use
    cases); no hook: the derived."""
    hook = getattr(proof(declared), "mutants", None)
    return tuple(hook(derived)) if hook is not None else derived


def seed_hook(declared: Service) -> SeedHook:
    """The service's seed (its proof's `seed`); none declared: nothing to seed."""

    def nothing(dynamodb: Any, tables: Mapping[str, str], *, reset: bool = False) -> int:  # noqa: ARG001
        return 0

    hook: SeedHook = getattr(proof(declared), "seed", nothing)
    return hook


# `story_facts(items)`: (table short name, sort key prefix) -> the items there in one entity's
# partition; returns, per provider port it calls, what the story of that entity shows of the
# provider (a dict with a one-line `summary`).
StoryItems = Callable[[str, str], list[dict[str, Any]]]
StoryFacts = Callable[[StoryItems], dict[str, dict[str, Any]]]


def story_facts(declared: Service) -> StoryFacts:
    """The service's provider facts for an entity's story (its proof's `story_facts`); none
    declared: the story shows the declared effects only."""
    hook: StoryFacts | None = getattr(proof(declared), "story_facts", None)
    return hook or (lambda _items: {})


def story_total(declared: Service) -> Callable[[Mapping[str, Any]], str]:
    """What an entity's story header shows as its total, from its stored item (its proof's
    `story_total`: the sample's "12.00 EUR"); none declared: nothing, since the lab knows no
    entity's fields."""
    hook: Callable[[Mapping[str, Any]], str] | None = getattr(proof(declared), "story_total", None)
    return hook or (lambda _item: "")


def record_at(
    declared: Service, step: str, *, entity_id: str, token: str, fence_id: str
) -> tuple[str, dict[str, Any]]:
    """(table short name, key) of `step`'s record on the run `token` of an entity: the fence table
    under its fence id, or the item the step declares as its `record` (`<prefix><token>` in the
    entity's partition), as the library's saga puts it (`reliability.saga.Saga.record_on`; a test
    holds the sample's runtime to the same place)."""
    record = declared.step(step).record
    if record is None:
        return FENCES, {"id": {"S": fence_id}}
    pk = declared.entity.partition(entity_id)
    return record.table, {"pk": {"S": pk}, "sk": {"S": f"{record.prefix}{token}"}}


def record_tables(declared: Service) -> tuple[str, ...]:
    """Every table that holds step records: the fence table and the declared carriers' tables."""
    return (FENCES, *sorted({s.record.table for s in declared.steps if s.record is not None}))


def step_statuses(declared: Service, states: Mapping[str, str]) -> dict[str, str]:
    """Each declared step's status on a run from its record's state (stored `FenceState` values by
    step name; absent or unknown: never ran), as a service's GET of its entity shows it
    (`reliability.declaration.Service.step_statuses`: the one mechanism)."""
    return {step: status.value for step, status in declared.step_statuses(states).items()}
