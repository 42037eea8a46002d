"""Mutants of the library's module-level constants, which mutmut does not mutate.

mutmut 3.8.1 mutates function bodies only, so the conditions the store writes (``CLAIMABLE``,
``OWNED``), what ending a lease removes, the transition and refusal tables, the limits and the
error classifications would never be changed by it. Each mutant here replaces one constant with a
plausible wrong value (the kind of slip a change could make); ``scripts/constant_mutants.py`` runs
the library's tests once per mutant (``RELIABILITY_CONSTANT_MUTANT=<name>``, applied by
``conftest.py`` before any test runs) and expects them to fail. A test-side seam: nothing here is
imported by the library.

A condition's mutant keeps every placeholder in use (DynamoDB refuses an expression with an unused
value, which would "kill" it for the wrong reason): it changes what the condition admits, not
whether it parses.

A constant is imported by name into other modules (``from reliability.requests import OWNED``),
so ``apply`` replaces every binding of that name to the original object in the library's modules;
a constant that is also a parameter's default (``MAX_RESULT_BYTES``) says so, and the keyword
defaults that hold it are replaced too (by identity: small ints are shared, so only when asked).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

from botocore.exceptions import HTTPClientError, ReadTimeoutError

import reliability
from reliability.record import FenceEvent, FenceState, Refusal

ENV = "RELIABILITY_CONSTANT_MUTANT"


@dataclass(frozen=True)
class ConstantMutant:
    name: str
    module: str  # where the constant is defined
    constant: str
    mutate: Callable[[Any], Any]  # original value -> mutated value
    what: str  # the slip it stands for
    in_defaults: bool = False  # also a parameter's default somewhere in the library


def _without(*members: Any) -> Callable[[Any], Any]:
    return lambda value: type(value)(m for m in value if m not in members)


def _replace(old: str, new: str) -> Callable[[str], str]:
    def mutate(value: str) -> str:
        assert old in value, (old, value)
        return value.replace(old, new)

    return mutate


def _mapping_with(key: Any, value: Any) -> Callable[[Any], Any]:
    return lambda table: {**table, key: value}


def _mapping_without(key: Any) -> Callable[[Any], Any]:
    return lambda table: {k: v for k, v in table.items() if k != key}


def _mutants() -> list[ConstantMutant]:
    R, Q, K, E, S, F = (
        "reliability.record",
        "reliability.requests",
        "reliability.keys",
        "reliability.errors",
        "reliability.store",
        "reliability.effects",
    )
    return [
        # the claim's condition
        ConstantMutant(
            "claimable-lease-boundary",
            Q,
            "CLAIMABLE",
            _replace("#lease < :now", "#lease <= :now"),
            "a lease is taken over at its expiry instant, while it still holds",
        ),
        ConstantMutant(
            "claimable-no-takeover",
            Q,
            "CLAIMABLE",
            _replace("#lease < :now", "#lease < :now AND #state <> :in_progress"),
            "an expired lease is never taken over",
        ),
        ConstantMutant(
            "claimable-no-lease-check",
            Q,
            "CLAIMABLE",
            _replace("#lease < :now", "(#lease < :now OR #lease >= :now)"),
            "a live lease is taken over",
        ),
        ConstantMutant("claimable-and", Q, "CLAIMABLE", _replace(" OR ", " AND "), "no first claim can win"),
        # an owner's transition
        ConstantMutant(
            "owned-no-token",
            Q,
            "OWNED",
            _replace("#fence = :token", "(#fence = :token OR #fence <> :token)"),
            "a stale owner (an older fencing token) completes",
        ),
        ConstantMutant(
            "owned-no-state",
            Q,
            "OWNED",
            _replace("#state = :in_progress", "(#state = :in_progress OR #state <> :in_progress)"),
            "the current owner rewrites a terminal record",
        ),
        ConstantMutant(
            "ends-lease-nothing",
            Q,
            "ENDS_LEASE",
            lambda _: (),
            "a completed or failed record keeps its owner and lease",
        ),
        ConstantMutant(
            "ends-lease-keeps-owner",
            Q,
            "ENDS_LEASE",
            lambda _: ("lease_expires",),
            "a completed or failed record keeps its owner",
        ),
        ConstantMutant(
            "ends-lease-keeps-lease",
            Q,
            "ENDS_LEASE",
            lambda _: ("owner",),
            "a completed or failed record keeps its lease",
        ),
        # the record's tables
        ConstantMutant(
            "transitions-no-fail",
            R,
            "TRANSITIONS",
            _mapping_without((FenceState.IN_PROGRESS, FenceEvent.FAIL)),
            "the table forgets that a business error fails a claimed step",
        ),
        ConstantMutant(
            "transitions-terminal-moves",
            R,
            "TRANSITIONS",
            _mapping_with((FenceState.COMPLETED, FenceEvent.FAIL), FenceState.FAILED),
            "the table lets a completed step fail",
        ),
        ConstantMutant(
            "transitions-wrong-target",
            R,
            "TRANSITIONS",
            _mapping_with((FenceState.ABSENT, FenceEvent.COMMIT_FAILURE), FenceState.COMPLETED),
            "the table says a failed atomic commit completes",
        ),
        ConstantMutant(
            "claim-refused-completed-busy",
            R,
            "CLAIM_REFUSED",
            _mapping_with(FenceState.COMPLETED, Refusal.BUSY),
            "a completed step answers busy instead of its result",
        ),
        ConstantMutant(
            "claim-refused-failed-skip",
            R,
            "CLAIM_REFUSED",
            _mapping_with(FenceState.FAILED, Refusal.SKIP),
            "a failed step answers as skipped instead of re-raising its error",
        ),
        ConstantMutant(
            "claim-refused-in-progress-skip",
            R,
            "CLAIM_REFUSED",
            _mapping_with(FenceState.IN_PROGRESS, Refusal.SKIP),
            "a step held by a live lease answers as skipped",
        ),
        ConstantMutant(
            "terminal-without-failed", R, "TERMINAL", _without(FenceState.FAILED), "FAILED is not terminal"
        ),
        # limits
        ConstantMutant(
            "max-result-bytes-plus-one",
            R,
            "MAX_RESULT_BYTES",
            lambda v: v + 1,
            "a result one byte over Step Functions' payload limit is stored",
            in_defaults=True,
        ),
        ConstantMutant(
            "max-batch-read-101",
            S,
            "MAX_BATCH_READ",
            lambda v: v + 1,
            "read_many accepts more keys than BatchGetItem reads",
        ),
        ConstantMutant(
            "max-batch-read-99", S, "MAX_BATCH_READ", lambda v: v - 1, "read_many refuses a full BatchGetItem"
        ),
        ConstantMutant(
            "max-effect-writes-100",
            F,
            "MAX_EFFECT_WRITES",
            lambda v: v + 1,
            "an effect fills the transaction and leaves no room for the record",
        ),
        ConstantMutant(
            "max-key-bytes-minus-one", K, "MAX_KEY_BYTES", lambda v: v - 1, "a key that fits is hashed"
        ),
        ConstantMutant(
            "label-chars-plus-one",
            K,
            "LABEL_CHARS",
            lambda v: v + 1,
            "a label one character longer than documented",
        ),
        ConstantMutant(
            "max-token-chars-81",
            K,
            "MAX_TOKEN_CHARS",
            lambda v: v + 1,
            "an execution token longer than a Step Functions execution name",
        ),
        ConstantMutant(
            "segment-pattern-allows-hash",
            K,
            "_SEGMENT",
            lambda _: re.compile(r"^[^\s]{1,64}$"),
            "a namespace or stage with '#' breaks the key's separators",
        ),
        ConstantMutant(
            "execution-safe-allows-dot",
            K,
            "_EXECUTION_SAFE",
            lambda _: re.compile(r"^[A-Za-z0-9_.-]+$"),
            "a business id with '.' makes a token that does not parse back",
        ),
        # error classification
        ConstantMutant(
            "transient-codes-no-conflict",
            E,
            "TRANSIENT_CODES",
            _without("TransactionConflictException"),
            "a transaction conflict is not retried",
        ),
        ConstantMutant(
            "transient-codes-no-throttling",
            E,
            "TRANSIENT_CODES",
            _without("ThrottlingException"),
            "a throttle is not retried",
        ),
        ConstantMutant(
            "retryable-cancellation-no-conflict",
            E,
            "RETRYABLE_CANCELLATION_CODES",
            _without("TransactionConflict"),
            "a cancelled transaction's conflict is not retried",
        ),
        ConstantMutant(
            "connection-errors-no-read-timeout",
            E,
            "CONNECTION_ERRORS",
            _without(ReadTimeoutError),
            "a read timeout (the answer lost) is not retried",
        ),
        ConstantMutant(
            "connection-errors-no-http-client",
            E,
            "CONNECTION_ERRORS",
            _without(HTTPClientError),
            "an HTTP client failure is not retried",
        ),
    ]


def mutants() -> dict[str, ConstantMutant]:
    return {m.name: m for m in _mutants()}


def _library_modules() -> list[ModuleType]:
    for info in pkgutil.walk_packages(reliability.__path__, "reliability."):
        importlib.import_module(info.name)
    return [m for n, m in sys.modules.items() if n == "reliability" or n.startswith("reliability.")]


def apply(name: str) -> int:
    """Switch the mutant ``name`` on; the number of bindings replaced (at least one)."""
    mutant = mutants()[name]
    original = getattr(importlib.import_module(mutant.module), mutant.constant)
    mutated = mutant.mutate(original)
    replaced = 0
    for module in _library_modules():
        if getattr(module, mutant.constant, None) is original:
            setattr(module, mutant.constant, mutated)
            replaced += 1
        if not mutant.in_defaults:
            continue
        for value in list(vars(module).values()):
            if inspect.isclass(value) and value.__module__ == module.__name__:
                replaced += _replace_defaults(vars(value).values(), original, mutated)
            elif isinstance(value, FunctionType) and value.__module__ == module.__name__:
                replaced += _replace_defaults([value], original, mutated)
    if not replaced:
        raise LookupError(f"constant mutant {name}: {mutant.module}.{mutant.constant} is bound nowhere")
    return replaced


def _replace_defaults(members: Any, original: Any, mutated: Any) -> int:
    replaced = 0
    for member in members:
        function = getattr(member, "__func__", member)
        if not isinstance(function, FunctionType):
            continue
        if function.__kwdefaults__:
            for key, default in function.__kwdefaults__.items():
                if default is original:
                    function.__kwdefaults__[key] = mutated
                    replaced += 1
        if function.__defaults__ and any(d is original for d in function.__defaults__):
            function.__defaults__ = tuple(mutated if d is original else d for d in function.__defaults__)
            replaced += 1
    return replaced
