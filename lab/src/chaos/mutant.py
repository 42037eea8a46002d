"""A mutant: one guard switched off, and how it is applied to a world.

A mutant rewrites what its functions send to AWS (or read back), on the clients the simulator
hands each function's runtime (the composition root: `ChaosCloud.runtime_for`), edits the
synthesized template before the world deploys it, or builds its functions' runtimes with another
use case or another library guard class. No production class grows a switch. The mutants
themselves are listed in `chaos.mutants` (the library's guards, and those derived from the
declaration) and in the service's proof hook (its own use cases' old behaviours).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chaos.audit import is_fence

Params = dict[str, Any]
# (function short name, operation, request parameters, the client) -> the parameters were changed
Rewrite = Callable[[str, str, Params, Any], bool]
# (function short name, operation, request parameters, parsed response) -> None (edits in place)
Respond = Callable[[str, str, Params, dict[str, Any]], None]

_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    guard: str  # what the guard protects, for the report
    functions: frozenset[str]
    rewrite: Rewrite | None = None
    respond: Respond | None = None
    # The synthesized app template, edited before the world deploys it (what synth would emit
    # without the guard: a Retry list, an environment, a schedule).
    template: Callable[[dict[str, Any]], None] | None = None
    # The composition root the mutant's functions are built with (the service's `Runtime`,
    # `Service.runtime`, whose use case takes the old behaviour), for a guard that is domain code,
    # not a request.
    runtime: Callable[..., Any] | None = None
    # The library's guard classes its functions' runtimes are built with instead of the library's
    # own (`Runtime` keyword arguments: `fence_store_class`, `http_idempotency_class`).
    guards: tuple[tuple[str, type], ...] = ()
    # Set when the mutant is equivalent to the original (no schedule can tell them apart): why.
    equivalent: str = ""
    # Set when the search cannot reach the guard in this simulator (not dead code): why.
    blind: str = ""
    issue10: str = ""  # which of issue 10's old behaviours it reintroduces, if any

    def applies(self, function: str) -> bool:
        return function in self.functions


def _entries(operation: str, params: Params) -> Iterable[Params]:
    """The request bodies that carry expressions (each entry of a transaction)."""
    if operation == "TransactWriteItems":
        for entry in params.get("TransactItems", []):
            yield from entry.values()
    else:
        yield params


def prune(entry: Params) -> None:
    """Drop expression names and values no expression uses (DynamoDB refuses unused ones)."""
    text = " ".join(str(entry.get(k, "")) for k in _EXPRESSIONS)
    for table in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
        if table in entry:
            entry[table] = {k: v for k, v in entry[table].items() if re.search(re.escape(k) + r"\b", text)}
            if not entry[table]:
                del entry[table]


def replace_condition(old: str, new: str | None, *, operations: Iterable[str] = ()) -> Rewrite:
    """Replace a ConditionExpression equal to `old` by `new` (None: no condition at all)."""
    allowed = frozenset(operations)

    def rewrite(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
        if allowed and operation not in allowed:
            return False
        changed = False
        for entry in _entries(operation, params):
            if entry.get("ConditionExpression") == old:
                if new is None:
                    del entry["ConditionExpression"]
                    entry.pop("ReturnValuesOnConditionCheckFailure", None)
                else:
                    entry["ConditionExpression"] = new
                prune(entry)
                changed = True
        return changed

    return rewrite


def _carries_record(update: Params | None) -> bool:
    """An Update of a business item that sets a fence record on it (`Write.carries_record`)."""
    names = (update or {}).get("ExpressionAttributeNames", {}).values()
    return "state" in names and "fencing_token" in names


def drop_fence_put_condition(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
    """A fence record written terminal (`run_atomic`) without `attribute_not_exists`: its Put in a
    transaction, or the Update of the business item that carries it (alone or heading one)."""
    if operation == "UpdateItem":
        entries = [params]
    elif operation == "TransactWriteItems":
        entries = [e.get("Put") or e.get("Update") for e in params.get("TransactItems", [])]
    else:
        return False
    changed = False
    for entry in entries:
        conditional = entry is not None and entry.get("ConditionExpression") == "attribute_not_exists(#id)"
        if conditional and (is_fence(entry.get("Item")) or _carries_record(entry)):
            del entry["ConditionExpression"]
            entry.pop("ReturnValuesOnConditionCheckFailure", None)
            prune(entry)
            changed = True
    return changed


def both(*rewrites: Rewrite) -> Rewrite:
    def rewrite(function: str, operation: str, params: Params, client: Any = None) -> bool:
        return any([r(function, operation, params, client) for r in rewrites])  # every one applies

    return rewrite


def instrument(client: Any, function: str, mutant: Mutant | None) -> Any:
    """Put `mutant`'s hooks on one function's client (and take an earlier world's off)."""
    events = client.meta.events
    for event in ("before-parameter-build", "after-call"):
        events.unregister(event, unique_id=f"mutant-{event}")
    if mutant is None or not mutant.applies(function):
        return client
    rewrite, respond = mutant.rewrite, mutant.respond

    def before(params: Params, model: Any, context: dict[str, Any], **_: Any) -> None:
        if rewrite is not None:
            rewrite(function, model.name, params, client)
        context["mutant_params"] = params  # per request: one client serves concurrent invocations

    def after(parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if respond is not None:
            respond(function, model.name, context.get("mutant_params", {}), parsed)

    events.register("before-parameter-build", before, unique_id="mutant-before-parameter-build")
    events.register("after-call", after, unique_id="mutant-after-call")
    return client
