"""The fence record's DynamoDB requests: its attributes as written, ``SET``/``REMOVE`` expressions,
the conditions of the claim and of an owner's transition, the conditional update, the put written
as an update, and the record carried by a business item (``Write.carries_record``).

The record's states, transitions and codec are in ``reliability.record``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reliability.effects import Write, dropped
from reliability.errors import BusinessError
from reliability.keys import canonical_json
from reliability.record import RECORD_KEY, RECORD_TTL_ATTRIBUTE, Fence, FenceState, Refused

# A claim wins an absent record or an IN_PROGRESS one whose lease has passed.
CLAIMABLE = "attribute_not_exists(#id) OR (#state = :in_progress AND #lease < :now)"
# Only the holder of the current fencing token completes, fails or releases.
OWNED = "#state = :in_progress AND #fence = :token"
# What completing or failing removes: the attempt that held the lease, and the lease.
ENDS_LEASE = ("owner", "lease_expires")


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
        RECORD_TTL_ATTRIBUTE: {"N": str(int(now + ttl_seconds))},
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
_NAMES = {"#id": RECORD_KEY, "#state": "state", "#lease": "lease_expires", "#fence": "fencing_token"}


def record_key(fence: Fence) -> dict[str, Any]:
    return {RECORD_KEY: {"S": fence.key.value}}


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
    names = {("#id" if name == RECORD_KEY else f"#c{i}"): name for i, name in enumerate(record)}
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


def transact(
    send: Callable[..., dict[str, Any] | Refused], head: Mapping[str, Any], writes: Sequence[Write]
) -> tuple[dict[str, Any] | Refused, list[Write]]:
    """The record's entry + the effect writes in one transaction (through the store's one error
    mapper, ``send``), sent again without the optional writes whose conditions alone failed
    (``reliability.effects.dropped``); the answer and the writes it was for."""
    sent = list(writes)
    while True:
        response = send("transact_write_items", TransactItems=[head, *(w.entry for w in sent)])
        if not isinstance(response, Refused) or response.record_refused:
            return response, sent
        skip = dropped(sent, response.reasons)
        if not skip:
            return response, sent
        sent = [w for i, w in enumerate(sent) if i not in skip]
