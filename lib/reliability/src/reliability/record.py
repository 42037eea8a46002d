"""A fence record: its states, the only transitions the store makes, and its codec.

A step is identified by ``StepId(token, step[, item])``; its record lives at
``derive_key(namespace, stage=..., identity={token, step[, item]})`` in a table keyed by ``id``
(S) with TTL attribute ``expiration`` (epoch seconds). Attributes: ``state``, ``fencing_token``
(N; 0 for ``run_atomic``), ``owner``, ``lease_expires`` (epoch s; 0 = released), ``claimed_at``
(the first claim's time; takeovers keep it), ``result`` (canonical JSON), ``error_type`` /
``error_message`` / ``error_details`` (FAILED), ``label``, ``token``, ``step``, ``item``,
``updated_at``, ``expiration``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer

from reliability.errors import BusinessError, ResultTooLarge
from reliability.keys import Key, canonical_json

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

# The record tables' key and TTL attribute: every record the library writes (fences, consumer
# dedup) and Powertools' HTTP records (its defaults). `reliability.cdk.table` builds the tables
# with these; nothing else names them.
RECORD_KEY = "id"
RECORD_TTL_ATTRIBUTE = "expiration"

# Step Functions limits a state's payload to 256 KiB; a result that big can never be handed on.
# DynamoDB's 400 KB item limit is then never the binding one for a fence record.
MAX_RESULT_BYTES = 256 * 1024

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
class Fence:
    """A step and its record's key, derived once per operation (``FenceStore.fence``)."""

    step: StepId
    key: Key


@dataclass(frozen=True)
class Outcome:
    result: dict[str, Any]
    skipped: bool
    fencing_token: int


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
            key=str(data[RECORD_KEY]),
            state=FenceState(str(data["state"])),
            fencing_token=int(data.get("fencing_token", 0)),
            owner=data.get("owner"),
            lease_expires=float(data["lease_expires"]) if "lease_expires" in data else None,
            result=json.loads(data["result"]) if "result" in data else None,
            error_type=data.get("error_type"),
            error_message=data.get("error_message"),
            error_details=json.loads(data["error_details"]) if "error_details" in data else None,
            expiration=int(data[RECORD_TTL_ATTRIBUTE]) if RECORD_TTL_ATTRIBUTE in data else None,
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
class Refused:
    """A write whose condition failed. ``old``: the fence record's ALL_OLD item when its own
    condition failed (None when it held, or when no item came back); ``reasons``: a transaction's
    cancellation reasons, the record's first."""

    error: ClientError
    record_refused: bool
    old: Mapping[str, Any] | None
    reasons: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Claim:
    won: bool
    record: FenceRecord
    takeover: bool = False


def encode_result(result: Mapping[str, Any], limit: int) -> str:
    """The ``result`` attribute: canonical JSON of a mapping, at most ``limit`` bytes."""
    if not isinstance(result, Mapping):
        raise TypeError(f"a step result must be a mapping, got {type(result).__name__}")
    text = canonical_json(dict(result))
    size = len(text.encode())
    if size > limit:
        raise ResultTooLarge(f"step result is {size} bytes; the limit is {limit} (Step Functions 256 KiB)")
    return text
