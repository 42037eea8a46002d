"""Mutants: each guard of the application switched off alone, to prove the search needs it.

A mutant rewrites what one or more functions send to AWS (or read back), on the clients the
simulator hands each function's runtime (the composition root: `ChaosCloud.runtime_for`). No
production class grows a switch, and the rewrite is exactly the guard: the condition that makes
a claim wait for the lease, the fencing counter's increment, the write that makes a completed
step final, ... A mutant the search never catches is a finding: either the guard is dead code
(the mutant is equivalent, and the table says why) or the search is blind.

Beside the hand-written mutants of the library's guards, every declared entry gets its own,
derived from the service's declaration (`derived`, `ops.service.service()`): for each step a
`fence-off` (its fence never refuses a second attempt), for each leased step with a `reconcile` a
`reconcile-off` (its takeover acts again without looking up), for each consumer a `dedup-off`, for
each idempotent route a `payload-hash-off`. Each switches the library's guard off for that entry's
function only (a request rewrite on its clients, or a subclass of the library's class handed to its
runtime, `chaos.guards`), so a new step, consumer or route is mutated with no edit here.

Mutants of a guard that is the service's own use case (the sample's: its run guard, its callers'
scope, its consumers' verification) are its proof hook's (`ops.service.service_mutants`).

The all-guards-off control (`chaos.control.unfenced_runtime`) stays as one line of the report.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from chaos import unguarded as old
from chaos.guards import payload_unhashed, takeover_without_reconcile
from chaos.mutant import (
    Mutant,
    Params,
    both,
    drop_fence_put_condition,
    instrument,
    prune,
    replace_condition,
)
from ops.service import service, service_mutants
from reliability.declaration import Service, function_name
from reliability.http import with_attempt
from reliability.requests import CLAIMABLE, OWNED

__all__ = ["MUTANTS", "Mutant", "by_name", "derived", "instrument", "prune", "replace_condition"]

# The functions each guard lives in, from the declaration: a new step or consumer is mutated too.
_DECLARED = service()
STEPS_ATOMIC = frozenset(function_name(s.name) for s in _DECLARED.steps if s.kind == "atomic")
STEPS_LEASED = frozenset(function_name(s.name) for s in _DECLARED.steps if s.kind == "leased")
CONSUMERS = frozenset(c.name for c in _DECLARED.consumers)
FENCED = STEPS_ATOMIC | STEPS_LEASED | CONSUMERS
STEPS = STEPS_ATOMIC | STEPS_LEASED

_CLAIM, _OWNER = CLAIMABLE, OWNED


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


GUARDS: tuple[Mutant, ...] = (
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
        f"one execution per ({_DECLARED.entity.name}, run): StartExecution's name is derived, a second "
        "start is refused",
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
        "http-payload-hash",
        "a key reused with a different body is refused (422), never answered with the first's response",
        frozenset({"api"}),
        respond=_PayloadHash().respond,
    ),
    Mutant(
        "rerun-own-write",
        "`make rerun` recognises its own landed transition on the SDK's resend (a call token), not "
        "RerunRefused",
        frozenset({"ops.rerun"}),
        old.forget_own_write,
    ),
)


# The guard against a fence that never refuses: its record written terminal without
# `attribute_not_exists` (an atomic step, a consumer's dedup), its claim taken whatever it holds.
_NEVER_REFUSES = both(drop_fence_put_condition, replace_condition(_CLAIM, None, operations=["UpdateItem"]))


def derived(declared: Service) -> tuple[Mutant, ...]:
    """One mutant per declared entry and guard, each the library's guard off for that entry alone."""
    mutants = [
        Mutant(
            f"fence-off:{step.name}",
            f"{step.name}'s fence refuses a second attempt: its effect applies once per run",
            frozenset({function_name(step.name)}),
            _NEVER_REFUSES,
        )
        for step in declared.steps
    ]
    mutants += [
        Mutant(
            f"reconcile-off:{step.name}",
            f"a takeover of {step.name} asks its provider what an earlier attempt did before acting again",
            frozenset({function_name(step.name)}),
            guards=(("fence_store_class", takeover_without_reconcile(step.name)),),
            issue10=old.ISSUE10[2],
        )
        for step in declared.steps
        if step.kind == "leased" and step.reconciles
    ]
    mutants += [
        Mutant(
            f"dedup-off:{consumer.name}",
            f"{consumer.name} applies an event once (its dedup record, written with the effect)",
            frozenset({consumer.name}),
            _NEVER_REFUSES,
        )
        for consumer in declared.consumers
    ]
    mutants += [
        Mutant(
            f"payload-hash-off:{route.operation_id}",
            f"{route.name}: a key reused with a different body is refused (422), never answered with "
            "the first's response",
            frozenset({"api"}),
            guards=(("http_idempotency_class", payload_unhashed(route.name)),),
        )
        for route in declared.routes
        if route.idempotent
    ]
    return tuple(mutants)


# The library's guards, each off everywhere it applies; then one per declared entry and guard, and
# the service's own (its use cases' old behaviours), all through its proof hook (the sample's
# `proof.mutants`), which also says which are equivalent for its effects, and why: a library
# guard too (the consumers' dedup, where every consumer's effect is a put-once of its own).
MUTANTS: tuple[Mutant, ...] = service_mutants(_DECLARED, GUARDS + derived(_DECLARED))


def by_name(name: str) -> Mutant:
    for mutant in MUTANTS:
        if mutant.name == name:
            return mutant
    raise KeyError(f"no mutant {name!r} (known: {[m.name for m in MUTANTS]})")
