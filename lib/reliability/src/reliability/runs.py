"""Step fences: at-most-once effects for steps that AWS may run more than once.

Why our own code and not Powertools' idempotency utility: Powertools gives a lock
(INPROGRESS -> COMPLETED, deleted on failure) but no fencing counter, so a zombie attempt that
resumes after its lock expired can still write its completion; no lease takeover by a numbered
owner; no way to commit the effect's own DynamoDB writes and the record in one transaction; and
no FAILED state that replays a business error. This adds exactly those, and keeps Powertools'
good ideas: one conditional write as the lock, and ``ReturnValuesOnConditionCheckFailure=ALL_OLD``
so losing costs no second read. The record is ``reliability.record``; the primitives
``reliability.store``; the two ways to run a step are here:

``run_atomic(step, build)``
    For steps whose only effects are DynamoDB writes computed from the input. ``build()`` must
    not have side effects (it runs on replays too, and its writes are discarded then); a
    ``BusinessError`` it raises is recorded FAILED unless the step already has a record, whose
    answer then wins (a replay after success must not fail on state its own effect changed). ONE
    ``TransactWriteItems``: a Put of the COMPLETED record conditioned on
    ``attribute_not_exists(id)`` plus the effect writes. First run: 1 round trip. Replay: 1
    round trip; the stored record comes back in the cancellation reason (ALL_OLD). When an effect
    write's own condition fails, its ``BusinessError`` is recorded as FAILED and raised. When one
    write ``carries_record`` (the Update of the one item per step the effect writes), the record is
    set on that item instead (``reliability.requests.carried_entry``): one UpdateItem alone, or the
    head of the effect's transaction; no record in the fence table. ``record_on`` (``RecordOn``)
    names that item for a step: the write to it carries the record, and a FAILED record is an
    item of its own at its key (a replay's write to the item is refused by it), so every record
    of the step is where its effect is.

``run_leased(step, attempt_id=..., lease_seconds=..., effect=...)``
    For external effects. claim (one conditional UpdateItem, ALL_NEW / ALL_OLD) -> effect(key)
    with a key derived from (namespace, token, step[, item]) only, so every attempt and every
    takeover hands the external system the same idempotency key -> complete, conditioned on the
    fencing counter still being this attempt's. If the effect returns an ``AtomicEffect``, its
    writes commit in the same transaction as the completion, so a stale owner's writes never
    land. ``BusinessError`` -> FAILED; any other exception -> the claim is released (lease
    cleared, counter kept) and the exception propagates intact. An ``ExternalEffect`` tells a
    takeover how not to repeat an earlier attempt's effect blind (reconcile, or
    ``ExternalKeyExpired`` past the external key's lifetime).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from reliability.effects import AtomicEffect, ExternalEffect, RecordOn, Write, cancellation_error
from reliability.errors import (
    BusinessError,
    ExternalKeyExpired,
    FenceBusy,
    ReliabilityError,
    StaleFence,
    StoreError,
)
from reliability.faults import crash_point
from reliability.record import (
    CLAIM_REFUSED,
    RECORD_KEY,
    RECORD_TTL_ATTRIBUTE,
    Claim,
    Fence,
    FenceRecord,
    FenceState,
    Outcome,
    Refusal,
    Refused,
    StepId,
    encode_result,
)
from reliability.requests import carried_entry, error_attributes, meta_attributes, put_as_update, transact
from reliability.store import FenceRecords
from reliability.telemetry import Decision

Produced = Mapping[str, Any] | AtomicEffect


class FenceStore(FenceRecords):
    """The fence table's primitives (``FenceRecords``) and the two ways to run a step on them."""

    # --------------------------------------------------------------- atomic
    def run_atomic(
        self, step: StepId, build: Callable[[], AtomicEffect], *, record_on: RecordOn | None = None
    ) -> Outcome:
        """Effect writes + COMPLETED record in ONE TransactWriteItems; a replay costs one round trip.
        ``record_on``: the business item its effect writes carries the record (module doc)."""
        fence = self.fence(step)
        try:
            effect = build()
        except BusinessError as refused:
            # build() decided from state it read (e.g. stock). On a replay that state may already
            # include this step's own effect, so the fence answers first: one conditional put of
            # FAILED that yields to any stored record (ALL_OLD).
            return self._put_failed(fence, refused, record_on)
        if not isinstance(effect, AtomicEffect):
            raise TypeError("build() must return an AtomicEffect")
        writes = effect.normalized()
        if record_on is not None:
            writes = record_on.mark(writes)
        text = encode_result(effect.result, self._max_result)
        completed = {"state": {"S": FenceState.COMPLETED.value}, "result": {"S": text}}
        carriers = [w for w in writes if w.carries_record]
        if carriers:
            response, writes = self._commit_carried(fence, completed, carriers, writes, record_on)
        else:
            response, writes = transact(self._send, {"Put": self._put(fence, completed)}, writes)
        if isinstance(response, Refused):
            if response.record_refused:
                return self._answer(fence, response)
            failure = cancellation_error(writes, response.reasons)
            if isinstance(failure, BusinessError):
                return self._put_failed(fence, failure, record_on)
            raise failure from response.error
        self._log(Decision.FENCE_COMPLETED, fence, mode="atomic")
        return Outcome(result=json.loads(text), skipped=False, fencing_token=0)

    def _commit_carried(
        self,
        fence: Fence,
        completed: Mapping[str, Any],
        carriers: list[Write],
        writes: list[Write],
        record_on: RecordOn | None,
    ) -> tuple[dict[str, Any] | Refused, list[Write]]:
        """The COMPLETED record set on the item its one carrier write updates (``carried_entry``):
        one UpdateItem when that is the only write, else the head of the effect's transaction. A
        Put carries it as the Update that writes the same item (keyed as ``record_on`` says)."""
        entry = carriers[0].entry
        record = self._carried_record(fence, completed)
        if len(carriers) == 1 and "Update" in entry:
            update = entry["Update"]
        elif len(carriers) == 1 and "Put" in entry and record_on is not None:
            update = put_as_update(entry["Put"], list(record_on.key), record)
        else:
            raise TypeError("at most one write carries the record: an Update, or the Put of a RecordOn item")
        head = carried_entry(update, record)
        rest = [w for w in writes if not w.carries_record]
        if not rest:
            return self._send("update_item", **head), rest
        return transact(self._send, {"Update": head}, rest)

    def _put(self, fence: Fence, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """A terminal record for ``run_atomic``, only where none exists (the stored one is ALL_OLD)."""
        item = {
            RECORD_KEY: {"S": fence.key.value},
            "fencing_token": {"N": "0"},
            **attributes,
            **meta_attributes(fence, self._clock(), self._ttl),
        }
        return {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#id)",
            "ExpressionAttributeNames": {"#id": RECORD_KEY},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _carried_record(self, fence: Fence, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """A terminal record's attributes on a business item: no ``expiration`` (it lives as long
        as the item; a business table has no TTL)."""
        meta = meta_attributes(fence, self._clock(), self._ttl)
        meta.pop(RECORD_TTL_ATTRIBUTE)
        return {RECORD_KEY: {"S": fence.key.value}, "fencing_token": {"N": "0"}, **attributes, **meta}

    def _put_failed(self, fence: Fence, failure: BusinessError, record_on: RecordOn | None = None) -> Outcome:
        """ABSENT -> FAILED (a second round trip, on the business-failure path only), then raise.
        With ``record_on`` the FAILED record is an item of its own at that item's key."""
        attributes = {"state": {"S": FenceState.FAILED.value}, **error_attributes(failure)}
        put = self._put(fence, attributes)
        if record_on is not None:
            put["TableName"] = record_on.table
            put["Item"] = {**record_on.key, **self._carried_record(fence, attributes)}
        response = self._send("put_item", **put)
        if isinstance(response, Refused):
            return self._answer(fence, response)  # another attempt recorded first: its answer
        self._log(Decision.FENCE_FAILED, fence, error_type=type(failure).__name__, mode="atomic")
        raise failure

    def _answer(self, fence: Fence, refused: Refused) -> Outcome:
        """The stored record's answer to a refused atomic write: its result, its error, or busy."""
        if not refused.old:
            raise FenceBusy(f"fence {fence.key.value} refused the commit") from refused.error
        if "state" not in refused.old:
            raise StoreError(f"the item that carries {fence.key.value} exists without its record")
        record = FenceRecord.from_item(refused.old)
        if CLAIM_REFUSED[record.state] is Refusal.BUSY:
            self._log(Decision.FENCE_BUSY, fence, owner=record.owner, mode="atomic")
            raise FenceBusy(f"step {fence.step.step} is held by a leased attempt") from refused.error
        self._log(Decision.FENCE_SKIPPED, fence, state=record.state.value, mode="atomic")
        return _replay(fence, record)

    # --------------------------------------------------------------- leased
    def run_leased(
        self,
        step: StepId,
        *,
        attempt_id: str,
        lease_seconds: float,
        effect: Callable[[str], Produced],
    ) -> Outcome:
        """claim -> [a takeover reconciles] -> effect(external idempotency key) -> [crash point]
        -> complete (see the module doc)."""
        fence = self.fence(step)
        claim = self.claim(fence, attempt_id=attempt_id, lease_seconds=lease_seconds)
        if not claim.won:
            return _replay(fence, claim.record)
        token = claim.record.fencing_token
        try:
            produced = (
                self._reconciled(fence, claim, attempt_id, effect)
                if claim.takeover and isinstance(effect, ExternalEffect)
                else None
            )
            if produced is None:
                produced = effect(fence.key.value)
        except BusinessError as error:
            self.fail(fence, fencing_token=token, error=error, attempt_id=attempt_id)
            raise
        except Exception as error:
            self._release_quietly(fence, token, attempt_id, error)
            raise
        crash_point(f"fence:after-effect:{step.step}", self._crash_plan)
        try:
            return self.complete(fence, fencing_token=token, result=produced, attempt_id=attempt_id)
        except (StaleFence, BusinessError):
            raise
        except (ReliabilityError, TypeError) as error:
            self._release_quietly(fence, token, attempt_id, error)
            raise

    def _reconciled(
        self, fence: Fence, claim: Claim, attempt_id: str, effect: ExternalEffect
    ) -> Produced | None:
        """What an earlier attempt already did (to record instead of acting), or None to act."""
        if effect.reconcile is not None:
            found = effect.reconcile()
            if found is not None:
                token = claim.record.fencing_token
                self._log(Decision.FENCE_TAKEOVER, fence, attempt_id, fencing_token=token, reconciled=True)
            return found
        first = claim.record.claimed_at
        age = self._clock() - first if first is not None else 0.0
        lifetime = effect.key_lifetime_seconds
        if lifetime is not None and age > lifetime:
            raise ExternalKeyExpired(
                f"step {fence.step.step}: taking over an attempt first claimed {age:.0f} s ago, but the "
                f"external system keeps its idempotency key only {lifetime:.0f} s and "
                "offers no lookup; acting again could repeat the effect. Check the external system "
                "by hand before redriving."
            )
        return None

    def _release_quietly(self, fence: Fence, token: int, attempt_id: str, error: BaseException) -> None:
        step = fence.step
        self._telemetry.retry(
            reason=type(error).__name__,
            step=step.step,
            token=step.token,
            attempt=attempt_id,
            fencing_token=token,
        )
        try:
            self.release(fence, fencing_token=token, attempt_id=attempt_id)
        except ReliabilityError:
            # The lease will expire on its own; the original exception is the one to report.
            self._telemetry.logger.info(
                "fence release failed; the lease will expire", extra={"step": step.step}
            )


def _replay(fence: Fence, record: FenceRecord) -> Outcome:
    """What a stored record answers: its result (skipped), its BusinessError, or busy."""
    if record.state is FenceState.FAILED:
        raise record.business_error()
    if record.state is FenceState.COMPLETED:
        return Outcome(result=record.result or {}, skipped=True, fencing_token=record.fencing_token)
    raise FenceBusy(f"step {fence.step.step} is in progress")
