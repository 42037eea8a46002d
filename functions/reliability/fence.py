"""Step fences: at-most-once effects for steps that AWS may run more than once.

Why our own code and not Powertools' idempotency utility: Powertools gives a lock
(INPROGRESS -> COMPLETED, deleted on failure) but no fencing counter, so a zombie attempt that
resumes after its lock expired can still write its completion; no lease takeover by a numbered
owner; no way to commit the effect's own DynamoDB writes and the record in one transaction; and
no FAILED state that replays a business error. This module adds exactly those, and keeps
Powertools' good ideas: one conditional write as the lock, and
``ReturnValuesOnConditionCheckFailure=ALL_OLD`` so losing costs no second read.

A step is identified by ``StepId(token, step[, item])``; its record lives at
``derive_key(namespace, stage=..., identity={token, step[, item]})`` in a table keyed by ``id``
(S) with TTL attribute ``expiration`` (epoch seconds).

Two ways to run a step:

``run_atomic(step, build)``
    For steps whose only effects are DynamoDB writes computed from the input. ``build()`` must
    not have side effects (it runs on replays too, and its writes are discarded then); a
    ``BusinessError`` it raises is recorded FAILED unless the step already has a record, whose
    answer then wins (a replay after success must not fail on state its own effect changed). ONE
    ``TransactWriteItems``: a Put of the COMPLETED record conditioned on
    ``attribute_not_exists(id)`` plus the effect writes. First run: 1 round trip. Replay: 1
    round trip; the stored record comes back in the cancellation reason (ALL_OLD). When an effect
    write's own condition fails, the ``BusinessError`` attached to that write (``Write`` or
    ``AtomicEffect.on_condition_failure``) is recorded as FAILED and raised.

``run_leased(step, attempt_id=..., lease_seconds=..., effect=...)``
    For external effects. claim (one conditional UpdateItem, ALL_NEW / ALL_OLD) -> effect(key)
    with a key derived from (namespace, token, step[, item]) only, so every attempt and every
    takeover hands the external system the same idempotency key -> complete, conditioned on the
    fencing counter still being this attempt's. If the effect returns an ``AtomicEffect``, its
    writes commit in the same transaction as the completion, so a stale owner's writes never
    land. ``BusinessError`` -> FAILED; any other exception -> the claim is released (lease
    cleared, counter kept) and the exception propagates intact.

Record states and transitions are in ``TRANSITIONS`` (tested in test_fence_states.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from reliability.crashpoints import CrashPlan, crash_point
from reliability.errors import (
    CONNECTION_ERRORS,
    RETRYABLE_CANCELLATION_CODES,
    BusinessError,
    EffectConditionFailed,
    ExternalKeyExpired,
    FenceBusy,
    ReliabilityError,
    ResultTooLarge,
    StaleFence,
    StoreError,
    TransientError,
    error_code,
    store_error,
)
from reliability.keys import Key, canonical_json, derive_key
from reliability.telemetry import Decision, Telemetry

# Step Functions limits a state's payload to 256 KiB; a result that big can never be handed on.
# DynamoDB's 400 KB item limit is then never the binding one for a fence record.
MAX_RESULT_BYTES = 256 * 1024
# DynamoDB TransactWriteItems accepts at most 100 actions; one is the fence record.
MAX_EFFECT_WRITES = 99
# BatchGetItem reads at most 100 keys per call.
MAX_BATCH_READ = 100

_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


class FenceState(StrEnum):
    ABSENT = "ABSENT"  # no record (never stored)
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class FenceEvent(Enum):
    CLAIM = "claim"  # first claim: counter 0 -> 1
    TAKEOVER = "takeover"  # claim of an IN_PROGRESS record whose lease expired or was released; counter + 1
    COMPLETE = "complete"  # by the attempt holding the current counter
    FAIL = "fail"  # BusinessError, by the attempt holding the current counter
    RELEASE = "release"  # non-business exception: lease cleared, counter kept (a reset would revive zombies)
    COMMIT = "commit"  # run_atomic: COMPLETED put with the effect writes, no lease
    COMMIT_FAILURE = "commit-failure"  # run_atomic: an effect condition failed with a BusinessError


# The only transitions the store makes; every other (state, event) pair is refused by a
# DynamoDB condition and answered from the ALL_OLD item (see CLAIM_REFUSED).
TRANSITIONS: Mapping[tuple[FenceState, FenceEvent], FenceState] = {
    (FenceState.ABSENT, FenceEvent.CLAIM): FenceState.IN_PROGRESS,
    (FenceState.IN_PROGRESS, FenceEvent.TAKEOVER): FenceState.IN_PROGRESS,
    (FenceState.IN_PROGRESS, FenceEvent.COMPLETE): FenceState.COMPLETED,
    (FenceState.IN_PROGRESS, FenceEvent.FAIL): FenceState.FAILED,
    (FenceState.IN_PROGRESS, FenceEvent.RELEASE): FenceState.IN_PROGRESS,
    (FenceState.ABSENT, FenceEvent.COMMIT): FenceState.COMPLETED,
    (FenceState.ABSENT, FenceEvent.COMMIT_FAILURE): FenceState.FAILED,
}


class Refusal(Enum):
    SKIP = "skip"  # return the stored result without running
    RAISE_STORED = "raise-stored"  # re-raise the stored BusinessError
    BUSY = "busy"  # FenceBusy (retryable)


# What a claim or an atomic commit that lost its condition does, by the state it found.
CLAIM_REFUSED: Mapping[FenceState, Refusal] = {
    FenceState.COMPLETED: Refusal.SKIP,
    FenceState.FAILED: Refusal.RAISE_STORED,
    FenceState.IN_PROGRESS: Refusal.BUSY,  # live lease (an expired one is taken over, not refused)
}

# Terminal states never change again; a completed result never changes.
TERMINAL = frozenset({FenceState.COMPLETED, FenceState.FAILED})


def next_state(state: FenceState, event: FenceEvent) -> FenceState:
    """The state after ``event``; ValueError for a transition the store refuses."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise ValueError(f"no transition from {state} on {event.value}") from None


@dataclass(frozen=True)
class StepId:
    token: str
    step: str
    item: str | None = None

    def identity(self) -> dict[str, str]:
        ident = {"token": self.token, "step": self.step}
        if self.item is not None:
            ident["item"] = self.item
        return ident


@dataclass(frozen=True)
class Outcome:
    result: dict[str, Any]
    skipped: bool
    fencing_token: int


@dataclass(frozen=True)
class Write:
    """One ``TransactWriteItems`` entry (client shape, e.g. ``{"Update": {...}}``) and the
    BusinessError to raise when that entry's own condition fails (None: EffectConditionFailed)."""

    entry: dict[str, Any]
    on_condition_failed: BusinessError | None = None


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
        out: list[Write] = []
        for index, write in enumerate(self.writes):
            if isinstance(write, Write):
                failure = write.on_condition_failed or self.on_condition_failure.get(index)
                out.append(Write(write.entry, failure))
            else:
                out.append(Write(write, self.on_condition_failure.get(index)))
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


@dataclass(frozen=True)
class FenceRecord:
    key: str
    state: FenceState
    fencing_token: int
    owner: str | None = None
    lease_expires: float | None = None
    result: dict[str, Any] | None = None
    error_type: str | None = None
    error_message: str | None = None
    error_details: dict[str, Any] | None = None
    expiration: int | None = None
    label: str | None = None
    claimed_at: float | None = None  # the first claim's time (takeovers keep it)

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> FenceRecord:
        data = {k: _DESERIALIZER.deserialize(v) for k, v in item.items()}
        return cls(
            key=str(data["id"]),
            state=FenceState(str(data["state"])),
            fencing_token=int(data.get("fencing_token", 0)),
            owner=data.get("owner"),
            lease_expires=float(data["lease_expires"]) if "lease_expires" in data else None,
            result=json.loads(data["result"]) if "result" in data else None,
            error_type=data.get("error_type"),
            error_message=data.get("error_message"),
            error_details=json.loads(data["error_details"]) if "error_details" in data else None,
            expiration=int(data["expiration"]) if "expiration" in data else None,
            label=data.get("label"),
            claimed_at=float(data["claimed_at"]) if "claimed_at" in data else None,
        )

    def lease_live(self, now: float) -> bool:
        return self.state is FenceState.IN_PROGRESS and (self.lease_expires or 0) >= now

    def business_error(self) -> BusinessError:
        return BusinessError.restore(
            self.error_type or "BusinessError", self.error_message or "", self.error_details
        )


@dataclass(frozen=True)
class Claim:
    won: bool
    record: FenceRecord
    takeover: bool = False


def _encode_result(result: Mapping[str, Any], limit: int) -> str:
    if not isinstance(result, Mapping):
        raise TypeError(f"a step result must be a mapping, got {type(result).__name__}")
    text = canonical_json(dict(result))
    size = len(text.encode())
    if size > limit:
        raise ResultTooLarge(f"step result is {size} bytes; the limit is {limit} (Step Functions 256 KiB)")
    return text


def _num(value: float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


class FenceStore:
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
        crash_plan: CrashPlan | None = None,
        max_result_bytes: int = MAX_RESULT_BYTES,
    ) -> None:
        """``stage`` defaults to "-" because execution tokens already carry it; ``crash_plan``
        defaults to the cold-start plan of ``reliability.crashpoints``."""
        self._client = client
        self._table = table_name
        self._ttl = ttl_seconds
        self._telemetry = telemetry
        self.namespace = namespace
        self._clock = clock
        self._stage = stage
        self._crash_plan = crash_plan
        self._max_result = max_result_bytes

    # ----------------------------------------------------------------- keys
    def key_for(self, step: StepId) -> Key:
        return derive_key(self.namespace, stage=self._stage, identity=step.identity())

    def external_key(self, step: StepId) -> str:
        """The idempotency key handed to an external system: the same for every attempt of ``step``."""
        return self.key_for(step).value

    def _log(
        self, outcome: Decision, step: StepId, key: Key, attempt: str | None = None, **fields: Any
    ) -> None:
        self._telemetry.decision(
            outcome,
            key=key.value,
            token=step.token,
            step=step.step,
            attempt=attempt,
            item=step.item,
            label=key.label,
            namespace=self.namespace,
            **fields,
        )

    def _meta(self, step: StepId, key: Key, now: float) -> dict[str, dict[str, str]]:
        meta = {
            "label": {"S": key.label},
            "token": {"S": step.token},
            "step": {"S": step.step},
            "updated_at": _num(now),
            "expiration": {"N": str(int(now + self._ttl))},
        }
        if step.item is not None:
            meta["item"] = {"S": step.item}
        return meta

    # ----------------------------------------------------------- primitives
    def read(self, step: StepId) -> FenceRecord | None:
        """A consistent read of the record (operators and tests; the run_* paths never need it)."""
        try:
            response = self._client.get_item(
                TableName=self._table, Key={"id": {"S": self.key_for(step).value}}, ConsistentRead=True
            )
        except ClientError as error:
            raise store_error(error) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error
        item = response.get("Item")
        return FenceRecord.from_item(item) if item else None

    def read_many(self, steps: Sequence[StepId]) -> dict[StepId, FenceRecord]:
        """Consistent reads of up to 100 records in one BatchGetItem (plus a retry of any keys
        DynamoDB left unprocessed); steps without a record are absent from the answer."""
        by_key = {self.key_for(step).value: step for step in steps}
        if len(by_key) > MAX_BATCH_READ:
            raise ValueError(f"read_many reads at most {MAX_BATCH_READ} records, got {len(by_key)}")
        found: dict[StepId, FenceRecord] = {}
        pending: dict[str, Any] = {
            self._table: {"Keys": [{"id": {"S": key}} for key in by_key], "ConsistentRead": True}
        }
        while pending:
            try:
                response = self._client.batch_get_item(RequestItems=pending)
            except ClientError as error:
                raise store_error(error) from error
            except CONNECTION_ERRORS as error:
                raise store_error(error) from error
            for item in response.get("Responses", {}).get(self._table, []):
                record = FenceRecord.from_item(item)
                found[by_key[record.key]] = record
            pending = response.get("UnprocessedKeys") or {}
        return found

    def claim(self, step: StepId, *, attempt_id: str, lease_seconds: float) -> Claim:
        """One conditional UpdateItem. Won: the record is IN_PROGRESS with this attempt as owner and
        a new fencing token. Lost to COMPLETED/FAILED: ``Claim(won=False)`` with the stored record
        (from ALL_OLD). Lost to a live lease: FenceBusy."""
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds}")
        key = self.key_for(step)
        now = self._clock()
        meta = self._meta(step, key, now)
        names = {
            "#id": "id",
            "#state": "state",
            "#owner": "owner",
            "#lease": "lease_expires",
            "#fence": "fencing_token",
        }
        values: dict[str, Any] = {
            ":in_progress": {"S": FenceState.IN_PROGRESS.value},
            ":owner": {"S": attempt_id},
            ":lease": _num(now + lease_seconds),
            ":now": _num(now),
            ":one": {"N": "1"},
        }
        names["#claimed"] = "claimed_at"
        sets = [
            "#state = :in_progress",
            "#owner = :owner",
            "#lease = :lease",
            "#claimed = if_not_exists(#claimed, :now)",
        ]
        for i, (attr, value) in enumerate(meta.items()):
            names[f"#m{i}"] = attr
            values[f":m{i}"] = value
            sets.append(f"#m{i} = :m{i}")
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key={"id": {"S": key.value}},
                UpdateExpression=f"SET {', '.join(sets)} ADD #fence :one",
                ConditionExpression="attribute_not_exists(#id) OR (#state = :in_progress AND #lease < :now)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise store_error(error) from error
            old = error.response.get("Item")
            if not old:
                # The condition can only fail on an existing item; without ALL_OLD, say busy and retry.
                raise FenceBusy(f"fence {key.value} refused the claim") from error
            record = FenceRecord.from_item(old)
            refusal = CLAIM_REFUSED[record.state]
            if refusal is Refusal.BUSY:
                self._log(Decision.FENCE_BUSY, step, key, attempt_id, owner=record.owner)
                raise FenceBusy(
                    f"step {step.step} is held by another attempt until {record.lease_expires}"
                ) from error
            self._log(Decision.FENCE_SKIPPED, step, key, attempt_id, state=record.state.value)
            return Claim(won=False, record=record)
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error
        record = FenceRecord.from_item(response["Attributes"])
        takeover = record.fencing_token > 1
        self._log(
            Decision.FENCE_TAKEOVER if takeover else Decision.FENCE_CLAIMED,
            step,
            key,
            attempt_id,
            fencing_token=record.fencing_token,
        )
        return Claim(won=True, record=record, takeover=takeover)

    def _owner_update(
        self,
        key: Key,
        fencing_token: int,
        sets: dict[str, dict[str, Any]],
        removes: Sequence[str],
    ) -> dict[str, Any]:
        """The Update entry every owner-only transition uses: conditioned on the counter."""
        names = {"#state": "state", "#fence": "fencing_token"}
        values: dict[str, Any] = {
            ":in_progress": {"S": FenceState.IN_PROGRESS.value},
            ":token": {"N": str(fencing_token)},
        }
        clauses = []
        for i, (attr, value) in enumerate(sets.items()):
            names[f"#s{i}"] = attr
            values[f":s{i}"] = value
            clauses.append(f"#s{i} = :s{i}")
        expression = f"SET {', '.join(clauses)}"
        if removes:
            for i, attr in enumerate(removes):
                names[f"#r{i}"] = attr
            expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes)))
        return {
            "TableName": self._table,
            "Key": {"id": {"S": key.value}},
            "UpdateExpression": expression,
            "ConditionExpression": "#state = :in_progress AND #fence = :token",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _stale(self, step: StepId, key: Key, attempt: str | None, fencing_token: int, old: Any) -> StaleFence:
        current = FenceRecord.from_item(old) if old else None
        self._log(
            Decision.FENCE_STALE,
            step,
            key,
            attempt,
            fencing_token=fencing_token,
            current_token=current.fencing_token if current else None,
            current_state=current.state.value if current else None,
        )
        return StaleFence(
            f"step {step.step}: fencing token {fencing_token} is no longer current; "
            "this attempt's effect was not recorded"
        )

    def _update_owned(
        self, step: StepId, key: Key, attempt: str | None, fencing_token: int, update: dict[str, Any]
    ) -> None:
        try:
            self._client.update_item(**update)
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                raise self._stale(step, key, attempt, fencing_token, error.response.get("Item")) from error
            raise store_error(error) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error

    def complete(
        self,
        step: StepId,
        *,
        fencing_token: int,
        result: Mapping[str, Any] | AtomicEffect,
        attempt_id: str | None = None,
    ) -> Outcome:
        """IN_PROGRESS -> COMPLETED if ``fencing_token`` is still current, else StaleFence.
        With an AtomicEffect, its writes commit in the same transaction (or not at all)."""
        key = self.key_for(step)
        now = self._clock()
        if isinstance(result, AtomicEffect):
            effect: AtomicEffect | None = result
            text = _encode_result(result.result, self._max_result)
        else:
            effect = None
            text = _encode_result(result, self._max_result)
        sets = {
            "state": {"S": FenceState.COMPLETED.value},
            "result": {"S": text},
            **self._meta(step, key, now),
        }
        update = self._owner_update(key, fencing_token, sets, ["owner", "lease_expires"])
        if effect is None:
            self._update_owned(step, key, attempt_id, fencing_token, update)
        else:
            self._transact_owned(
                step=step,
                key=key,
                attempt=attempt_id,
                fencing_token=fencing_token,
                update=update,
                effect=effect,
            )
        self._log(Decision.FENCE_COMPLETED, step, key, attempt_id, fencing_token=fencing_token)
        return Outcome(result=json.loads(text), skipped=False, fencing_token=fencing_token)

    def _transact_owned(
        self,
        *,
        step: StepId,
        key: Key,
        attempt: str | None,
        fencing_token: int,
        update: dict[str, Any],
        effect: AtomicEffect,
    ) -> None:
        writes = effect.normalized()
        _check_write_count(writes)
        try:
            self._client.transact_write_items(TransactItems=[{"Update": update}, *(w.entry for w in writes)])
        except ClientError as error:
            reasons = _reasons(error)
            if reasons is None:
                raise store_error(error) from error
            if reasons[0].get("Code") == "ConditionalCheckFailed":
                raise self._stale(step, key, attempt, fencing_token, reasons[0].get("Item")) from error
            failure = _effect_failure(writes, reasons[1:])
            if isinstance(failure, BusinessError):
                self.fail(step, fencing_token=fencing_token, error=failure, attempt_id=attempt)
                raise failure from error
            if failure is not None:
                raise failure from error
            raise _cancellation_error(reasons) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error

    def fail(
        self, step: StepId, *, fencing_token: int, error: BusinessError, attempt_id: str | None = None
    ) -> None:
        """IN_PROGRESS -> FAILED with the error's class name, message and details (owner only)."""
        key = self.key_for(step)
        now = self._clock()
        sets = {
            "state": {"S": FenceState.FAILED.value},
            **_error_attributes(error),
            **self._meta(step, key, now),
        }
        update = self._owner_update(key, fencing_token, sets, ["owner", "lease_expires"])
        self._update_owned(step, key, attempt_id, fencing_token, update)
        self._log(Decision.FENCE_FAILED, step, key, attempt_id, error_type=type(error).__name__)

    def release(self, step: StepId, *, fencing_token: int, attempt_id: str | None = None) -> bool:
        """Clear the lease (owner only) so a retry need not wait for it; the counter is kept.
        False when the fence already moved on (this attempt was stale anyway)."""
        key = self.key_for(step)
        now = self._clock()
        update = self._owner_update(
            key, fencing_token, {"lease_expires": {"N": "0"}, "updated_at": _num(now)}, ["owner"]
        )
        try:
            self._update_owned(step, key, attempt_id, fencing_token, update)
        except StaleFence:
            return False
        self._log(Decision.FENCE_RELEASED, step, key, attempt_id, fencing_token=fencing_token)
        return True

    # ------------------------------------------------------------ the runs
    def _replay(self, step: StepId, record: FenceRecord) -> Outcome:
        if record.state is FenceState.FAILED:
            raise record.business_error()
        if record.state is FenceState.COMPLETED:
            return Outcome(result=record.result or {}, skipped=True, fencing_token=record.fencing_token)
        raise FenceBusy(f"step {step.step} is in progress")

    def run_atomic(self, step: StepId, build: Callable[[], AtomicEffect]) -> Outcome:
        """Effect writes + COMPLETED record in ONE TransactWriteItems; a replay costs one round trip."""
        key = self.key_for(step)
        try:
            effect = build()
        except BusinessError as refused:
            # build() decided from state it read (e.g. stock). On a replay that state may already
            # include this step's own effect, so the fence answers first: one conditional put of
            # FAILED that yields to any stored record (ALL_OLD).
            return self._record_atomic_failure(step, key, refused)
        if not isinstance(effect, AtomicEffect):
            raise TypeError("build() must return an AtomicEffect")
        writes = effect.normalized()
        _check_write_count(writes)
        text = _encode_result(effect.result, self._max_result)
        now = self._clock()
        item = {
            "id": {"S": key.value},
            "state": {"S": FenceState.COMPLETED.value},
            "fencing_token": {"N": "0"},
            "result": {"S": text},
            **self._meta(step, key, now),
        }
        put = {
            "Put": {
                "TableName": self._table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(#id)",
                "ExpressionAttributeNames": {"#id": "id"},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        try:
            self._client.transact_write_items(TransactItems=[put, *(w.entry for w in writes)])
        except ClientError as error:
            reasons = _reasons(error)
            if reasons is None:
                raise store_error(error) from error
            first = reasons[0]
            if first.get("Code") == "ConditionalCheckFailed":
                return self._refused_atomic(step, key, first.get("Item"), error)
            failure = _effect_failure(writes, reasons[1:])
            if isinstance(failure, BusinessError):
                return self._record_atomic_failure(step, key, failure)
            if failure is not None:
                raise failure from error
            raise _cancellation_error(reasons) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error
        self._log(Decision.FENCE_COMPLETED, step, key, mode="atomic")
        return Outcome(result=json.loads(text), skipped=False, fencing_token=0)

    def _refused_atomic(self, step: StepId, key: Key, old: Any, error: Exception) -> Outcome:
        if not old:
            raise FenceBusy(f"fence {key.value} refused the commit") from error
        record = FenceRecord.from_item(old)
        if CLAIM_REFUSED[record.state] is Refusal.BUSY:
            self._log(Decision.FENCE_BUSY, step, key, owner=record.owner, mode="atomic")
            raise FenceBusy(f"step {step.step} is held by a leased attempt") from error
        self._log(Decision.FENCE_SKIPPED, step, key, state=record.state.value, mode="atomic")
        return self._replay(step, record)

    def _record_atomic_failure(self, step: StepId, key: Key, failure: BusinessError) -> Outcome:
        """ABSENT -> FAILED (a second round trip, on the business-failure path only), then raise."""
        now = self._clock()
        item = {
            "id": {"S": key.value},
            "state": {"S": FenceState.FAILED.value},
            "fencing_token": {"N": "0"},
            **_error_attributes(failure),
            **self._meta(step, key, now),
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#id": "id"},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                # Another attempt recorded first: its record is the answer.
                return self._refused_atomic(step, key, error.response.get("Item"), error)
            raise store_error(error) from error
        except CONNECTION_ERRORS as error:
            raise store_error(error) from error
        self._log(Decision.FENCE_FAILED, step, key, error_type=type(failure).__name__, mode="atomic")
        raise failure

    def run_leased(
        self,
        step: StepId,
        *,
        attempt_id: str,
        lease_seconds: float,
        effect: Callable[[str], Mapping[str, Any] | AtomicEffect],
    ) -> Outcome:
        """claim -> [a takeover reconciles] -> effect(external idempotency key) -> [crash point]
        -> complete (see module doc). ``effect`` may be an ``ExternalEffect``, which tells a
        takeover how to avoid repeating an earlier attempt's effect blind."""
        claim = self.claim(step, attempt_id=attempt_id, lease_seconds=lease_seconds)
        if not claim.won:
            return self._replay(step, claim.record)
        token = claim.record.fencing_token
        try:
            produced = (
                self._reconciled(step, claim, attempt_id, effect)
                if claim.takeover and isinstance(effect, ExternalEffect)
                else None
            )
            if produced is None:
                produced = effect(self.external_key(step))
        except BusinessError as error:
            self.fail(step, fencing_token=token, error=error, attempt_id=attempt_id)
            raise
        except Exception as error:
            self._release_quietly(step, token, attempt_id, error)
            raise
        crash_point(f"fence:after-effect:{step.step}", self._crash_plan)
        try:
            return self.complete(step, fencing_token=token, result=produced, attempt_id=attempt_id)
        except (StaleFence, BusinessError):
            raise
        except (ReliabilityError, TypeError) as error:
            self._release_quietly(step, token, attempt_id, error)
            raise

    def _reconciled(
        self, step: StepId, claim: Claim, attempt_id: str, effect: ExternalEffect
    ) -> Mapping[str, Any] | AtomicEffect | None:
        """What an earlier attempt already did (to record instead of acting), or None to act."""
        key = self.key_for(step)
        if effect.reconcile is not None:
            found = effect.reconcile()
            if found is not None:
                self._log(
                    Decision.FENCE_TAKEOVER,
                    step,
                    key,
                    attempt_id,
                    fencing_token=claim.record.fencing_token,
                    reconciled=True,
                )
            return found
        first = claim.record.claimed_at
        age = self._clock() - first if first is not None else 0.0
        key_lifetime_seconds = effect.key_lifetime_seconds
        if key_lifetime_seconds is not None and age > key_lifetime_seconds:
            raise ExternalKeyExpired(
                f"step {step.step}: taking over an attempt first claimed {age:.0f} s ago, but the "
                f"external system keeps its idempotency key only {key_lifetime_seconds:.0f} s and "
                "offers no lookup; acting again could repeat the effect. Check the external system "
                "by hand before redriving."
            )
        return None

    def _release_quietly(self, step: StepId, token: int, attempt_id: str, error: BaseException) -> None:
        self._telemetry.retry(
            reason=type(error).__name__,
            step=step.step,
            token=step.token,
            attempt=attempt_id,
            fencing_token=token,
        )
        try:
            self.release(step, fencing_token=token, attempt_id=attempt_id)
        except ReliabilityError:
            # The lease will expire on its own; the original exception is the one to report.
            self._telemetry.logger.info(
                "fence release failed; the lease will expire", extra={"step": step.step}
            )


def _error_attributes(error: BusinessError) -> dict[str, dict[str, str]]:
    details = getattr(error, "details", None) or {}
    try:
        details_text = canonical_json(details)
    except TypeError:
        details_text = "{}"
    return {
        "error_type": {"S": type(error).__name__},
        "error_message": {"S": getattr(error, "message", None) or str(error)},
        "error_details": {"S": details_text},
    }


def _check_write_count(writes: Sequence[Write]) -> None:
    if len(writes) > MAX_EFFECT_WRITES:
        raise ValueError(f"an AtomicEffect holds at most {MAX_EFFECT_WRITES} writes, got {len(writes)}")


def _reasons(error: ClientError) -> list[dict[str, Any]] | None:
    if error_code(error) != "TransactionCanceledException":
        return None
    reasons = error.response.get("CancellationReasons")
    return list(reasons) if reasons else None


def _effect_failure(writes: Sequence[Write], reasons: Sequence[Mapping[str, Any]]) -> Exception | None:
    for index, reason in enumerate(reasons):
        if reason.get("Code") == "ConditionalCheckFailed":
            failure = writes[index].on_condition_failed
            if failure is not None:
                return failure
            return EffectConditionFailed(
                f"effect write {index} failed its condition and has no BusinessError attached",
                index=index,
                code="ConditionalCheckFailed",
            )
    return None


def _cancellation_error(reasons: Sequence[Mapping[str, Any]]) -> ReliabilityError:
    codes = [str(r.get("Code")) for r in reasons if r.get("Code") not in (None, "None")]
    if any(code in RETRYABLE_CANCELLATION_CODES for code in codes):
        return TransientError(f"transaction cancelled: {codes}")
    return StoreError(f"transaction cancelled: {codes}")
