"""The workflow's outcomes, derived from its declaration, and the requests that lead to each.

An outcome is one way a run can end: the happy path (`Service.happy_path`), and one per catch
route of a step on it (`Step.catch`: the step fails with that error, then the route's steps run
to the end). Each has the steps it runs and the entity status it ends in (the last of them that
declares a `status`). The lab draws outcomes, never a service's bodies: the fault search places
one request per outcome it draws, the demo plays one of each.

What a request for an outcome looks like is the service's own knowledge, in its proof module
(`Service.proof`, `ops.service.proof`):

- `request(outcome, index, variant=0) -> body`: the JSON body of request `index` of an outcome,
  sent to the route that starts runs (`starting_route`). A `variant` other than 0 is another body
  for the same outcome (a client that reuses its key with another payload);
- `prepare(dynamodb, tables)`: what the outcomes need in the tables beyond the seed (optional);
- `CHANGES` and `change(dynamodb, tables, body, change)`: how the world a request depends on may
  change between a client's retries (its reference data edited or removed; optional);
- `world_changed(dynamodb, tables, body) -> bool`: the request's reference data is gone, so its
  run may end on a catch route whatever its outcome was (optional).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ops.service import proof
from reliability.declaration import Route, Service, Step


@dataclass(frozen=True)
class Outcome:
    """One way a run ends: `name` (the happy path's status, or the catch's first error, in
    kebab-case: `completed`, `out-of-stock`), the steps it runs in order, the status it ends in
    (None: no step on it sets one), and the error and step that route it (None: the happy path)."""

    name: str
    steps: tuple[str, ...]
    status: str | None
    error: str | None = None
    failing_step: str | None = None

    @property
    def happy(self) -> bool:
        return self.error is None


def outcomes(declared: Service) -> tuple[Outcome, ...]:
    """The happy path, then one outcome per catch route of each step on it, in step order."""
    happy = declared.happy_path()
    found = [Outcome(kebab(_status_of(declared, happy) or "happy"), happy, _status_of(declared, happy))]
    for index, name in enumerate(happy):
        for target, errors in declared.step(name).catch.items():
            steps = (*happy[: index + 1], *_path_from(declared, target))
            found.append(Outcome(kebab(errors[0]), steps, _status_of(declared, steps), errors[0], name))
    names = [outcome.name for outcome in found]
    if len(set(names)) != len(names):
        raise ValueError(f"service {declared.name!r}: two outcomes share a name in {names}")
    return tuple(found)


def outcome(declared: Service, name: str) -> Outcome:
    for candidate in outcomes(declared):
        if candidate.name == name:
            return candidate
    raise KeyError(f"no outcome {name!r} in service {declared.name!r}")


def starting_route(declared: Service) -> Route:
    """The route whose request starts a run: the service's one idempotent POST."""
    found = [r for r in declared.routes if r.method == "POST" and r.idempotent]
    if len(found) != 1:
        raise ValueError(f"service {declared.name!r}: {len(found)} idempotent POST routes, expected one")
    return found[0]


def entity_route(declared: Service) -> Route | None:
    """The route that reads one entity: the GET whose path ends in the entity's id parameter."""
    parameter = "{" + id_field(declared) + "}"
    return next((r for r in declared.routes if r.method == "GET" and r.path.endswith(parameter)), None)


def id_field(declared: Service) -> str:
    """The field naming the entity in the starting route's answer and the reading route's path:
    the one its run message and records use (`Entity.id_field`)."""
    return declared.entity.id_field


RequestFactory = Callable[..., dict[str, Any]]


def request_factory(declared: Service) -> RequestFactory:
    """The service's `request(outcome, index, variant=0)`; a service without one cannot be searched."""
    hook: RequestFactory | None = getattr(proof(declared), "request", None)
    if hook is None:
        raise LookupError(f"service {declared.name!r}: its proof module defines no request(outcome, index)")
    return hook


def prepare(declared: Service, dynamodb: Any, tables: Mapping[str, str]) -> None:
    """The service's `prepare` hook, if it has one."""
    hook = getattr(proof(declared), "prepare", None)
    if hook is not None:
        hook(dynamodb, tables)


def changes(declared: Service) -> tuple[str, ...]:
    """The names of the world changes the service's proof knows (`CHANGES`)."""
    return tuple(getattr(proof(declared), "CHANGES", ()))


def change(declared: Service, dynamodb: Any, tables: Mapping[str, str], body: Any, kind: str) -> None:
    proof(declared).change(dynamodb, tables, body, kind)  # type: ignore[union-attr]


def world_changed(declared: Service, dynamodb: Any, tables: Mapping[str, str], body: Any) -> bool:
    hook = getattr(proof(declared), "world_changed", None)
    return bool(hook and hook(dynamodb, tables, body))


def kebab(name: str) -> str:
    """`OutOfStock` -> `out-of-stock`, `COMPLETED` -> `completed`."""
    if name.isupper():
        return name.lower()
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name).lstrip("-")


def _path_from(declared: Service, first: str) -> tuple[str, ...]:
    path = [first]
    while (following := declared.next_of(declared.step(path[-1]))) is not None:
        path.append(following)
    return tuple(path)


def _status_of(declared: Service, steps: tuple[str, ...]) -> str | None:
    statuses = [s.status for s in map(declared.step, steps) if isinstance(s, Step) and s.status]
    return statuses[-1] if statuses else None
