"""Mutants: each guard of the application switched off alone, to prove the search needs it.

A mutant rewrites what one or more functions send to AWS (or read back), on the clients the
simulator hands each function's runtime (the composition root: `ChaosCloud.runtime_for`). No
production class grows a switch, and the rewrite is exactly the guard: the condition that makes
a claim wait for the lease, the fencing counter's increment, the write that makes a completed
step final, ... A mutant the search never catches is a finding: either the guard is dead code
(the mutant is equivalent, and the table says why) or the search is blind.

The all-guards-off control (`chaos.control.unfenced_runtime`) stays as one line of the report.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos import behaviours as old
from chaos.audit import is_fence
from orders import workflow
from reliability.http import with_attempt

# The functions each guard lives in, from the workflow's lists: a new step or consumer is mutated too.
STEPS_ATOMIC = frozenset(workflow.function_name(s.name) for s in workflow.STEPS if s.kind == "atomic")
STEPS_LEASED = frozenset(workflow.function_name(s.name) for s in workflow.STEPS if s.kind == "leased")
RECONCILED = frozenset(workflow.function_name(s.name) for s in workflow.STEPS if s.reconcile)
CONSUMERS = frozenset(c.name for c in workflow.CONSUMERS)
FENCED = STEPS_ATOMIC | STEPS_LEASED | CONSUMERS
STEPS = STEPS_ATOMIC | STEPS_LEASED

Params = dict[str, Any]
# (function short name, operation, request parameters, the client) -> the parameters were changed
Rewrite = Callable[[str, str, Params, Any], bool]
# (function short name, operation, request parameters, parsed response) -> None (edits in place)
Respond = Callable[[str, str, Params, dict[str, Any]], None]

_CLAIM = "attribute_not_exists(#id) OR (#state = :in_progress AND #lease < :now)"
_OWNER = "#state = :in_progress AND #fence = :token"
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
    # The composition root the mutant's functions are built with (an `orders.runtime.Runtime`
    # whose use case takes the old behaviour), for a guard that is domain code, not a request.
    runtime: Callable[..., Any] | None = None
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


def counter_stays(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
    """The claim sets the fencing token to 1 instead of adding 1: a takeover gets the same token."""
    if operation != "UpdateItem" or params.get("ConditionExpression") != _CLAIM:
        return False
    expression = params["UpdateExpression"]
    if " ADD #fence :one" not in expression:
        return False
    params["UpdateExpression"] = expression.replace(" ADD #fence :one", ", #fence = :one")
    return True


def unique_execution_name(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
    """StartExecution under a fresh name every time: no dedup by execution name."""
    if operation != "StartExecution":
        return False
    params["name"] = f"{params['name'][:70]}-{uuid.uuid4().hex[:8]}"
    return True


@dataclass
class _PayloadHash:
    """Powertools stores the request's payload hash as `validation` and compares it with the
    stored record's on a replay; this mutant shows it the current request's hash instead."""

    current: dict[int, str] = field(default_factory=dict)

    def respond(self, _function: str, operation: str, params: Params, parsed: dict[str, Any]) -> None:
        if operation != "PutItem":
            return
        sent = (params.get("Item") or {}).get("validation")
        old = parsed.get("Item")
        if sent is not None and isinstance(old, dict) and "validation" in old:
            old["validation"] = sent


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "fence-claim-waits-for-lease",
        "a claim of an IN_PROGRESS fence waits until the holder's lease has expired",
        FENCED,
        replace_condition(
            _CLAIM, "attribute_not_exists(#id) OR #state = :in_progress", operations=["UpdateItem"]
        ),
    ),
    Mutant(
        "fence-claim-not-when-completed",
        "a COMPLETED/FAILED fence is never claimed again",
        FENCED,
        replace_condition(_CLAIM, "attribute_not_exists(#id) OR #lease < :now", operations=["UpdateItem"]),
        equivalent="complete and fail REMOVE lease_expires, so `#lease < :now` is false on a terminal "
        "record: the state test in the claim is implied by the record's shape",
    ),
    Mutant(
        "fence-owner-token",
        "only the holder of the current fencing token completes, fails or releases (AND #fence = :token)",
        FENCED,
        replace_condition(_OWNER, "#state = :in_progress"),
    ),
    Mutant(
        "fence-owner-state",
        "only an IN_PROGRESS fence is completed (#state = :in_progress)",
        FENCED,
        replace_condition(_OWNER, "#fence = :token"),
        equivalent="argued, not proven: only the holder of the current token passes `#fence = :token`, and "
        "the holder moves its fence out of IN_PROGRESS at most once (complete or fail, then it returns); a "
        "release after a lost complete answer clears owner and lease on the COMPLETED record, which keeps "
        "its state, token and result, and a claim still needs IN_PROGRESS: no schedule (56 tried) tells "
        "it apart",
    ),
    Mutant(
        "fencing-counter",
        "every claim takes a new fencing token (ADD #fence :one)",
        FENCED,
        counter_stays,
    ),
    Mutant(
        "atomic-step-once",
        "a run_atomic step's effect commits only with the first COMPLETED record (attribute_not_exists)",
        STEPS_ATOMIC,
        drop_fence_put_condition,
    ),
    Mutant(
        "consumer-dedup",
        "a consumer applies an event once (its dedup record, written with the effect)",
        CONSUMERS,
        both(drop_fence_put_condition, replace_condition(_CLAIM, None, operations=["UpdateItem"])),
    ),
    Mutant(
        "execution-name",
        "one execution per (order, run): StartExecution's name is derived, a second start is refused",
        frozenset({"worker"}),
        unique_execution_name,
    ),
    Mutant(
        "http-in-progress-lock",
        "a second request with the same key waits while the first is in progress (409)",
        frozenset({"api"}),
        replace_condition(
            with_attempt(
                "attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND "
                "attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
            ),
            with_attempt("attribute_not_exists(#id) OR #expiry < :now OR #status = :inprogress"),
            operations=["PutItem"],
        ),
    ),
    Mutant(
        "effect-with-fence",
        "a run_atomic step's (or consumer's) effect commits in one transaction with its COMPLETED record",
        STEPS_ATOMIC | CONSUMERS,
        old.split_effect_from_fence,
    ),
    Mutant(
        "run-guard",
        "the worker starts only the order's current run (a later run's message is poison, an earlier "
        "run's a duplicate)",
        frozenset({"worker"}),
        runtime=old.WorkerWithoutRunGuard,
        issue10=old.ISSUE10[5],
    ),
    Mutant(
        "provider-reconcile",
        "a leased takeover asks the provider for an earlier attempt's charge before charging again",
        RECONCILED,
        respond=old.provider_finds_nothing,
        issue10=old.ISSUE10[2],
    ),
    Mutant(
        "ttl-window",
        "every fence and dedup TTL outlives the windows it must (synth refuses a shorter one)",
        STEPS | CONSUMERS | {"worker", "api"},
        template=old.short_ttls,
        issue10=old.ISSUE10[1],
    ),
    Mutant(
        "transient-retried",
        "a transient AWS error (TransientError) is retried by the workflow",
        STEPS,
        template=old.no_transient_retry,
        issue10=old.ISSUE10[3],
    ),
    Mutant(
        "stranded-resend",
        "an ACCEPTED order's message is sent again, by the client's retry and by the sweeper",
        frozenset({"api", "sweep-accepted"}),
        runtime=old.ApiWithoutResend,
        template=old.no_sweeper,
        issue10=old.ISSUE10[4],
    ),
    Mutant(
        "http-payload-hash",
        "a key reused with a different body is refused (422), never answered with the first's response",
        frozenset({"api"}),
        respond=_PayloadHash().respond,
    ),
    # The root causes 1-5 of the outside review ("Whose key is it"), each the old behaviour back.
    Mutant(
        "caller-scope",
        "an Idempotency-Key and its order belong to the caller who sent it (another caller's is 404)",
        frozenset({"api"}),
        runtime=old.ApiWithoutCallers,
    ),
    Mutant(
        "retry-finds-order",
        "a retry with the same key and body gets its order, whatever the catalog became (found before "
        "pricing refuses)",
        frozenset({"api"}),
        runtime=old.ApiPricingFirst,
    ),
    Mutant(
        "rerun-own-write",
        "`make rerun` recognises its own landed transition on the SDK's resend (a call token), not "
        "RerunRefused",
        frozenset({"ops.rerun"}),
        old.forget_own_write,
    ),
    Mutant(
        "consumer-verifies",
        "a consumer dedupes on the fact an event states and dead-letters what it cannot verify",
        CONSUMERS,
        runtime=old.ConsumerTrustingEvents,
    ),
    Mutant(
        "late-copy-duplicate",
        "a late copy of an earlier run's message is a duplicate (acknowledged), not poison for the DLQ",
        frozenset({"worker"}),
        runtime=old.WorkerPagingOnLateCopies,
    ),
)


def by_name(name: str) -> Mutant:
    for mutant in MUTANTS:
        if mutant.name == name:
            return mutant
    raise KeyError(f"no mutant {name!r} (known: {[m.name for m in MUTANTS]})")


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
