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

from boto3.dynamodb.types import TypeDeserializer

from reliability.errors import BusinessError, ResultTooLarge
from reliability.keys import Key, canonical_json

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

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


def number(value: float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def error_attributes(error: BusinessError) -> dict[str, dict[str, str]]:
    """A FAILED record's attributes: what ``FenceRecord.business_error`` restores."""
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


def meta_attributes(fence: Fence, now: float, ttl_seconds: int) -> dict[str, dict[str, str]]:
    """What every write sets besides the state: label, token, step, item, times, TTL."""
    meta = {
        "label": {"S": fence.key.label},
        "token": {"S": fence.step.token},
        "step": {"S": fence.step.step},
        "updated_at": number(now),
        "expiration": {"N": str(int(now + ttl_seconds))},
    }
    if fence.step.item is not None:
        meta["item"] = {"S": fence.step.item}
    return meta


def expression(
    sets: Mapping[str, Any], removes: Sequence[str] = ()
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """``SET``/``REMOVE`` over placeholders: (expression, names, values). A str value is an
    expression of its own (``#self`` stands for the attribute), e.g. ``if_not_exists(#self, :now)``."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses = []
    for i, (attribute, value) in enumerate(sets.items()):
        names[f"#a{i}"] = attribute
        if isinstance(value, str):
            clauses.append(f"#a{i} = {value.replace('#self', f'#a{i}')}")
        else:
            values[f":a{i}"] = value
            clauses.append(f"#a{i} = :a{i}")
    text = f"SET {', '.join(clauses)}"
    if removes:
        names |= {f"#r{i}": attribute for i, attribute in enumerate(removes)}
        text += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes)))
    return text, names, values


# The record's attributes that conditions name.
_NAMES = {"#id": "id", "#state": "state", "#lease": "lease_expires", "#fence": "fencing_token"}


def record_key(fence: Fence) -> dict[str, Any]:
    return {"id": {"S": fence.key.value}}


def update_entry(
    table: str,
    fence: Fence,
    sets: Mapping[str, Any],
    removes: Sequence[str] = (),
    *,
    condition: str,
    values: Mapping[str, Any],
    add: str = "",
) -> dict[str, Any]:
    """A conditional UpdateItem of the record (ALL_OLD when the condition fails)."""
    text, names, placeheld = expression(sets, removes)
    used = {k: v for k, v in _NAMES.items() if k in condition + add}
    return {
        "TableName": table,
        "Key": record_key(fence),
        "UpdateExpression": text + add,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {**names, **used},
        "ExpressionAttributeValues": {
            **placeheld,
            ":in_progress": {"S": FenceState.IN_PROGRESS.value},
            **values,
        },
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def put_as_update(
    put: Mapping[str, Any], key_names: Sequence[str], record: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``Put`` of a business item as the ``Update`` that sets the same attributes (for
    ``carried_entry``): an attribute the record also sets must hold the record's value (then the
    record sets it); the Put's own condition may only be the item's absence, which the record's
    condition stands for (the item is only ever written with its record)."""
    item = put["Item"]
    condition = put.get("ConditionExpression")
    if condition is not None and condition not in {f"attribute_not_exists({name})" for name in key_names}:
        raise TypeError(f"a Put that carries the record has no condition but the item's absence: {condition}")
    fields = {name: value for name, value in item.items() if name not in key_names}
    clash = [name for name in fields if name in record and fields[name] != record[name]]
    if clash:
        raise TypeError(f"the item's {clash} would be overwritten by its record's")
    names = {f"#p{i}": name for i, name in enumerate(n for n in fields if n not in record)}
    return {
        "TableName": put["TableName"],
        "Key": {name: item[name] for name in key_names},
        "UpdateExpression": "SET " + ", ".join(f"{ph} = :{ph[1:]}" for ph in names) if names else "",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {f":{ph[1:]}": fields[name] for ph, name in names.items()},
    }


def carried_entry(update: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """A business item's ``Update`` that also sets the terminal ``record`` attributes (``id``
    included) on that item, only where no record is on it yet (ALL_OLD otherwise): the record
    carried by the item its step writes (``Write.carries_record``). No ``expiration``: the record
    lives as long as the item, and a business table has no TTL."""
    names = {("#id" if name == "id" else f"#c{i}"): name for i, name in enumerate(record)}
    sets = ", ".join(f"{placeholder} = :{placeholder[1:]}" for placeholder in names)
    text = str(update["UpdateExpression"]).strip()
    text = f"SET {sets}, {text[4:]}" if text.upper().startswith("SET ") else f"SET {sets} {text}".rstrip()
    if "ConditionExpression" in update:
        raise TypeError("a write that carries the record has no condition but the record's")
    return {
        **update,
        "UpdateExpression": text,
        "ConditionExpression": "attribute_not_exists(#id)",
        "ExpressionAttributeNames": {**update.get("ExpressionAttributeNames", {}), **names},
        "ExpressionAttributeValues": {
            **update.get("ExpressionAttributeValues", {}),
            **{f":{ph[1:]}": value for ph, value in zip(names, record.values(), strict=True)},
        },
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
