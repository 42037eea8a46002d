"""The fence table's primitives: read, claim, complete, fail, release, on ONE error mapper.

Every call goes through ``FenceRecords._send``: a failed condition comes back as a ``Refused``
(the ALL_OLD item, and a transaction's cancellation reasons), anything else AWS or the transport
raises becomes the layer's ``StoreError``/``TransientError`` (``reliability.errors.store_error``).
Each operation derives its record's key once (``fence(step)`` -> ``Fence``) and hands it on.
The run protocols built on these are in ``reliability.runs`` (``FenceStore``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from reliability.effects import AtomicEffect, RecordOn, Write, cancellation_error
from reliability.errors import (
    CONNECTION_ERRORS,
    BusinessError,
    FenceBusy,
    StaleFence,
    error_code,
    store_error,
)
from reliability.keys import derive_key
from reliability.record import (
    CLAIM_REFUSED,
    MAX_RESULT_BYTES,
    RECORD_KEY,
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
from reliability.requests import (
    CLAIMABLE,
    ENDS_LEASE,
    OWNED,
    error_attributes,
    meta_attributes,
    number,
    record_key,
    transact,
    update_entry,
)
from reliability.telemetry import Decision, Telemetry

if TYPE_CHECKING:
    from reliability.faults import FaultPlan

MAX_BATCH_READ = 100  # BatchGetItem reads at most 100 keys per call


class FenceRecords:
    def __init__(
        self,
        *,
        client: Any,
        table_name: str,
        ttl_seconds: int,
        telemetry: Telemetry,
        namespace: str,
        clock: Callable[[], float] = time.time,
        stage: str = "-",
        crash_plan: FaultPlan | None = None,
        max_result_bytes: int = MAX_RESULT_BYTES,
    ) -> None:
        """``stage`` is "-" by default (execution tokens carry it); ``crash_plan``: the cold start's."""
        self._client = client
        self._table = table_name
        self._ttl = ttl_seconds
        self._telemetry = telemetry
        self.namespace = namespace
        self._clock = clock
        self._stage = stage
        self._crash_plan = crash_plan
        self._max_result = max_result_bytes

    @property
    def stage(self) -> str:
        """The stage every key of this store names."""
        return self._stage

    def fence(self, step: StepId | Fence) -> Fence:
        """The step and its record's key (a ``Fence`` is handed on as it is)."""
        if isinstance(step, Fence):
            return step
        return Fence(step, derive_key(self.namespace, stage=self._stage, identity=step.identity()))

    def external_key(self, step: StepId | Fence) -> str:
        """The idempotency key handed to an external system: the same for every attempt of ``step``."""
        return self.fence(step).key.value

    def _log(self, outcome: Decision, fence: Fence, attempt: str | None = None, **fields: Any) -> None:
        step = fence.step
        self._telemetry.decision(
            outcome,
            key=fence.key.value,
            token=step.token,
            step=step.step,
            attempt=attempt,
            item=step.item,
            label=fence.key.label,
            namespace=self.namespace,
            **fields,
        )

    def _send(self, operation: str, **params: Any) -> dict[str, Any] | Refused:
        """The one error mapper (see the module doc)."""
        try:
            return dict(getattr(self._client, operation)(**params))
        except ClientError as error:
            code = error_code(error)
            if code == "ConditionalCheckFailedException":
                return Refused(error, record_refused=True, old=error.response.get("Item"))
            reasons = error.response.get("CancellationReasons")
            if code == "TransactionCanceledException" and reasons:
                first = reasons[0].get("Code") == "ConditionalCheckFailed"
                return Refused(error, first, reasons[0].get("Item") if first else None, list(reasons))
            raise store_error(error) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error

    # ----------------------------------------------------------------- reads
    def read(self, step: StepId | Fence) -> FenceRecord | None:
        """A consistent read of the record (operators and tests; the runs never need it)."""
        response = self._send(
            "get_item", TableName=self._table, Key=record_key(self.fence(step)), ConsistentRead=True
        )
        item = response.get("Item") if isinstance(response, dict) else None
        return FenceRecord.from_item(item) if item else None

    def read_many(
        self, steps: Sequence[StepId], *, record_on: Mapping[StepId, RecordOn] | None = None
    ) -> dict[StepId, FenceRecord]:
        """Consistent reads of up to 100 records in one BatchGetItem (plus a retry of any keys
        DynamoDB left unprocessed); steps without a record are absent from the answer. A step in
        ``record_on`` is read from the business item that carries its record (same call)."""
        carried = record_on or {}
        by_key = {self.fence(step).key.value: step for step in steps}
        if len(by_key) > MAX_BATCH_READ:
            raise ValueError(f"read_many reads at most {MAX_BATCH_READ} records, got {len(by_key)}")
        pending: Any = {}
        for value, step in by_key.items():
            on = carried.get(step)
            table, item_key = (on.table, dict(on.key)) if on else (self._table, {RECORD_KEY: {"S": value}})
            pending.setdefault(table, {"Keys": [], "ConsistentRead": True})["Keys"].append(item_key)
        found: dict[StepId, FenceRecord] = {}
        while pending:
            response = self._send("batch_get_item", RequestItems=pending)
            if not isinstance(response, dict):
                raise store_error(response.error) from response.error
            for items in response.get("Responses", {}).values():
                for item in items:
                    if "state" not in item or item.get(RECORD_KEY, {}).get("S") not in by_key:
                        continue  # a business item without a record (yet)
                    record = FenceRecord.from_item(item)
                    found[by_key[record.key]] = record
            pending = response.get("UnprocessedKeys")
        return found

    # ------------------------------------------------------------ the lease
    def claim(self, step: StepId | Fence, *, attempt_id: str, lease_seconds: float) -> Claim:
        """One conditional UpdateItem. Won: the record is IN_PROGRESS with this attempt as owner and
        a new fencing token. Lost to COMPLETED/FAILED: ``Claim(won=False)`` with the stored record
        (from ALL_OLD). Lost to a live lease: FenceBusy."""
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds}")
        fence, now = self.fence(step), self._clock()
        sets = {
            "state": {"S": FenceState.IN_PROGRESS.value},
            "owner": {"S": attempt_id},
            "lease_expires": number(now + lease_seconds),
            "claimed_at": "if_not_exists(#self, :now)",
            **meta_attributes(fence, now, self._ttl),
        }
        values = {":now": number(now), ":one": {"N": "1"}}
        # every claim takes a new fencing token
        update = update_entry(
            self._table, fence, sets, condition=CLAIMABLE, values=values, add=" ADD #fence :one"
        )
        response = self._send("update_item", **update, ReturnValues="ALL_NEW")
        if isinstance(response, Refused):
            if not response.old:
                # The condition can only fail on an existing item; without ALL_OLD, say busy and retry.
                raise FenceBusy(f"fence {fence.key.value} refused the claim") from response.error
            record = FenceRecord.from_item(response.old)
            if record.state is FenceState.IN_PROGRESS and record.owner == attempt_id:
                # This invocation's own claim: an SDK attempt of this call landed and its answer
                # was lost, so botocore sent it again (attempt ids are invocation ids, never shared).
                return self._claimed(fence, attempt_id, record)
            if CLAIM_REFUSED[record.state] is Refusal.BUSY:
                self._log(Decision.FENCE_BUSY, fence, attempt_id, owner=record.owner)
                raise FenceBusy(
                    f"step {fence.step.step} is held by another attempt until {record.lease_expires}"
                ) from response.error
            self._log(Decision.FENCE_SKIPPED, fence, attempt_id, state=record.state.value)
            return Claim(won=False, record=record)
        return self._claimed(fence, attempt_id, FenceRecord.from_item(response["Attributes"]))

    def _claimed(self, fence: Fence, attempt_id: str, record: FenceRecord) -> Claim:
        takeover = record.fencing_token > 1
        decision = Decision.FENCE_TAKEOVER if takeover else Decision.FENCE_CLAIMED
        self._log(decision, fence, attempt_id, fencing_token=record.fencing_token)
        return Claim(won=True, record=record, takeover=takeover)

    def complete(
        self,
        step: StepId | Fence,
        *,
        fencing_token: int,
        result: Mapping[str, Any] | AtomicEffect,
        attempt_id: str | None = None,
    ) -> Outcome:
        """IN_PROGRESS -> COMPLETED if ``fencing_token`` is still current, else StaleFence.
        With an AtomicEffect, its writes commit in the same transaction (or not at all)."""
        fence = self.fence(step)
        if isinstance(result, AtomicEffect):
            text, writes = encode_result(result.result, self._max_result), result.normalized()
            if any(write.carries_record for write in writes):  # a leased record is its own item
                raise TypeError("a leased step's completion has no write that carries its record")
        else:
            text, writes = encode_result(result, self._max_result), []
        sets = {"state": {"S": FenceState.COMPLETED.value}, "result": {"S": text}}
        self._owned(
            fence,
            fencing_token=fencing_token,
            attempt=attempt_id,
            sets=sets,
            removes=ENDS_LEASE,
            writes=writes,
        )
        self._log(Decision.FENCE_COMPLETED, fence, attempt_id, fencing_token=fencing_token)
        return Outcome(result=json.loads(text), skipped=False, fencing_token=fencing_token)

    def fail(
        self, step: StepId | Fence, *, fencing_token: int, error: BusinessError, attempt_id: str | None = None
    ) -> None:
        """IN_PROGRESS -> FAILED with the error's class name, message and details (owner only)."""
        fence = self.fence(step)
        sets = {"state": {"S": FenceState.FAILED.value}, **error_attributes(error)}
        self._owned(fence, fencing_token=fencing_token, attempt=attempt_id, sets=sets, removes=ENDS_LEASE)
        self._log(Decision.FENCE_FAILED, fence, attempt_id, error_type=type(error).__name__)

    def release(self, step: StepId | Fence, *, fencing_token: int, attempt_id: str | None = None) -> bool:
        """Clear the lease (owner only) so a retry need not wait for it; the counter is kept.
        False when the fence already moved on (this attempt was stale anyway)."""
        fence = self.fence(step)
        cleared = {"lease_expires": {"N": "0"}}
        try:
            self._owned(
                fence,
                fencing_token=fencing_token,
                attempt=attempt_id,
                sets=cleared,
                removes=["owner"],
                meta=False,
            )
        except StaleFence:
            return False
        self._log(Decision.FENCE_RELEASED, fence, attempt_id, fencing_token=fencing_token)
        return True

    def _owned(
        self,
        fence: Fence,
        *,
        fencing_token: int,
        attempt: str | None,
        sets: Mapping[str, Any],
        removes: Sequence[str],
        writes: Sequence[Write] = (),
        meta: bool = True,
    ) -> None:
        """An owner-only transition: conditioned on the counter; with ``writes``, one transaction.
        A lost condition is StaleFence; an effect write's is its error (a BusinessError fails the
        fence first, so a retry replays it)."""
        now = self._clock()
        stamp = meta_attributes(fence, now, self._ttl) if meta else {"updated_at": number(now)}
        token = {":token": {"N": str(fencing_token)}}
        update = update_entry(self._table, fence, {**sets, **stamp}, removes, condition=OWNED, values=token)
        if writes:
            response, writes = transact(self._send, {"Update": update}, writes)
        else:
            response = self._send("update_item", **update)
        if not isinstance(response, Refused):
            return
        if response.record_refused:
            if _already_landed(response.old, fencing_token, sets):
                return
            raise self._stale(fence, attempt, fencing_token, response.old) from response.error
        failure = cancellation_error(writes, response.reasons)
        if isinstance(failure, BusinessError):
            self.fail(fence, fencing_token=fencing_token, error=failure, attempt_id=attempt)
        raise failure from response.error

    def _stale(self, fence: Fence, attempt: str | None, fencing_token: int, old: Any) -> StaleFence:
        now = FenceRecord.from_item(old) if old else None
        state, token = (now.state.value, now.fencing_token) if now else (None, None)
        fields = {"fencing_token": fencing_token, "current_token": token, "current_state": state}
        self._log(Decision.FENCE_STALE, fence, attempt, **fields)
        return StaleFence(
            f"step {fence.step.step}: fencing token {fencing_token} is no longer current; "
            "this attempt's effect was not recorded"
        )


def _already_landed(old: Any, fencing_token: int, sets: Mapping[str, Any]) -> bool:
    """An owner-only transition refused because an SDK attempt of this same call landed and its
    answer was lost (botocore sent it again): the record already holds this fencing token in the
    state the transition sets, and only the token's holder can have put it there."""
    if not old or "state" not in sets:
        return False
    record = FenceRecord.from_item(old)
    return record.fencing_token == fencing_token and record.state.value == sets["state"]["S"]
