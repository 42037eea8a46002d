"""What a fenced step does: DynamoDB writes that commit with its record, or an external effect.

``AtomicEffect(result, writes)``: the writes commit in ONE ``TransactWriteItems`` with the fence
record (``run_atomic``, or a leased step's completion), or carry it themselves
(``Write.carries_record``, ``run_atomic`` only). When a write's own condition fails, the
``BusinessError`` attached to it (``Write.on_condition_failed`` or
``AtomicEffect.on_condition_failure``) is the answer (``cancellation_error``); when only
``optional`` writes fail theirs, the transaction is sent again without them (``dropped``).

``RecordOn(table, key)``: where a step's record lives when a business item carries it (the one
item its effect writes at that key, ``run_atomic(..., record_on=)``): its COMPLETED record is set
on that item by the write to it (marked ``carries_record``; a Put becomes the Update that sets
the same attributes), and a FAILED record is an item of its own at that key (so a replay's write
to the item sees it), never in the fence table.

``ExternalEffect(act, reconcile=, key_lifetime_seconds=)``: ``act(key)`` with the idempotency key
every attempt of the step shares; a takeover reconciles first (``FenceStore.run_leased``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reliability.errors import (
    RETRYABLE_CANCELLATION_CODES,
    BusinessError,
    EffectConditionFailed,
    ReliabilityError,
    StoreError,
    TransientError,
)

# DynamoDB TransactWriteItems accepts at most 100 actions; one is the fence record.
MAX_EFFECT_WRITES = 99


@dataclass(frozen=True)
class Write:
    """One ``TransactWriteItems`` entry (client shape, e.g. ``{"Update": {...}}``) and the
    BusinessError to raise when that entry's own condition fails (None: EffectConditionFailed).

    ``optional``: the write applies only where its condition holds. A transaction cannot skip one
    entry, so when optional writes alone fail their conditions the whole transaction is sent again
    without them: a second round trip, on that path only (e.g. stock returned to an item an operator
    removed meanwhile: docs/how-it-works.md, "No stranded order, runs guarded by the order").

    ``carries_record``: an ``Update`` of the business item that IS the step's once-only effect
    (one item per step, keyed by it): the fence record's attributes are set on that item, under
    the record's own condition, instead of a record of its own in the fence table
    (``FenceStore.run_atomic``): one write instead of a transaction of two. Its own condition is
    the record's (``attribute_not_exists(id)``). Without ``RecordOn`` (a consumer's dedup), the
    effect's ``build()`` raises no BusinessError (a FAILED answer is then a record of its own in
    the fence table, which this write would not see); with it, the FAILED record is at the item's
    key."""

    entry: dict[str, Any]
    on_condition_failed: BusinessError | None = None
    optional: bool = False
    carries_record: bool = False


@dataclass(frozen=True)
class RecordOn:
    """The business item that carries a step's record: its table's name and its key (the
    low-level client's shape, e.g. ``{"pk": {"S": ...}, "sk": {"S": ...}}``)."""

    table: str
    key: Mapping[str, Any]

    def mark(self, writes: Sequence[Write]) -> list[Write]:
        """``writes`` with the one that writes this item marked ``carries_record``; TypeError
        unless exactly one does (the step's entry and its effect disagree) or another already
        carries a record."""
        if any(write.carries_record for write in writes):
            raise TypeError("a step whose record is on a business item marks no write itself")
        hits = [i for i, write in enumerate(writes) if self._writes_it(write.entry)]
        if len(hits) != 1:
            raise TypeError(
                f"the effect writes the item {dict(self.key)} of {self.table} {len(hits)} times; "
                "the item that carries the step's record must be written exactly once"
            )
        out = list(writes)
        write = out[hits[0]]
        if write.on_condition_failed is not None or write.optional:
            raise TypeError("the write that carries the record has no BusinessError and is not optional")
        out[hits[0]] = Write(write.entry, carries_record=True)
        return out

    def _writes_it(self, entry: Mapping[str, Any]) -> bool:
        kind, body = next(iter(entry.items()))
        if kind not in ("Put", "Update") or body.get("TableName") != self.table:
            return False
        found = body["Item"] if kind == "Put" else body.get("Key", {})
        return {name: found.get(name) for name in self.key} == dict(self.key)


@dataclass(frozen=True)
class AtomicEffect:
    """A step's result and the DynamoDB writes that are its effect.

    ``writes`` items are plain entries or ``Write``; ``on_condition_failure`` maps an index in
    ``writes`` to the BusinessError to raise when that write's condition fails (a ``Write``'s own
    ``on_condition_failed`` wins).
    """

    result: dict[str, Any]
    writes: Sequence[dict[str, Any] | Write] = ()
    on_condition_failure: Mapping[int, BusinessError] = field(default_factory=dict)

    def normalized(self) -> list[Write]:
        """Each write with its BusinessError; ValueError past the transaction's size."""
        out: list[Write] = []
        for index, write in enumerate(self.writes):
            if isinstance(write, Write):
                failure = write.on_condition_failed or self.on_condition_failure.get(index)
                out.append(Write(write.entry, failure, write.optional, write.carries_record))
            else:
                out.append(Write(write, self.on_condition_failure.get(index)))
        if len(out) > MAX_EFFECT_WRITES:
            raise ValueError(f"an AtomicEffect holds at most {MAX_EFFECT_WRITES} writes, got {len(out)}")
        return out


@dataclass(frozen=True)
class ExternalEffect:
    """An external effect for ``run_leased``, with what a takeover needs to not repeat it blind.

    A takeover inherits an earlier attempt that may have acted and died before completing,
    possibly long ago (a redrive comes up to 14 days after the execution failed), when the
    external system may have forgotten the idempotency key. So it looks before it acts:
    ``reconcile()`` asks the external system by a reference that never expires and returns the
    earlier effect's result (recorded as this step's result; no second effect) or None (it never
    happened: act). Without ``reconcile``, a takeover whose first claim is older than
    ``key_lifetime_seconds`` (how long the external system dedupes a key) raises
    ``ExternalKeyExpired`` instead of acting: the execution stops for an operator.
    """

    act: Callable[[str], Mapping[str, Any] | AtomicEffect]
    reconcile: Callable[[], Mapping[str, Any] | AtomicEffect | None] | None = None
    key_lifetime_seconds: float | None = None

    def __call__(self, external_key: str) -> Mapping[str, Any] | AtomicEffect:
        return self.act(external_key)


def dropped(writes: Sequence[Write], reasons: Sequence[Mapping[str, Any]]) -> set[int]:
    """The indexes of the writes to send again without, when every effect write whose condition
    failed is ``optional`` (the record's own condition held); empty otherwise."""
    failed = {i for i, reason in enumerate(reasons[1:]) if reason.get("Code") == "ConditionalCheckFailed"}
    return failed if failed and all(writes[i].optional for i in failed) else set()


def cancellation_error(writes: Sequence[Write], reasons: Sequence[Mapping[str, Any]]) -> Exception:
    """Why a transaction of [fence record, *writes] was cancelled, when the record's own condition
    held: the BusinessError of the first effect write whose condition failed (EffectConditionFailed
    when it has none), else TransientError for a retryable cancellation, else StoreError."""
    for index, reason in enumerate(reasons[1:]):
        if reason.get("Code") == "ConditionalCheckFailed":
            failure = writes[index].on_condition_failed
            if failure is not None:
                return failure
            return EffectConditionFailed(
                f"effect write {index} failed its condition and has no BusinessError attached",
                index=index,
                code="ConditionalCheckFailed",
            )
    codes = [str(r.get("Code")) for r in reasons if r.get("Code") not in (None, "None")]
    error: ReliabilityError = (
        TransientError(f"transaction cancelled: {codes}")
        if any(code in RETRYABLE_CANCELLATION_CODES for code in codes)
        else StoreError(f"transaction cancelled: {codes}")
    )
    return error
