"""Every DynamoDB write as the items it changed: before and after, and who made it.

AWS applies each request atomically; the simulator serializes them (one lock per request), so
reading the touched items just before and just after a request, inside that lock, gives exactly
what the request changed. Observers (e.g. `chaos.audit.FenceAudit`) see each write with the
function invocation that made it (None for the simulator's own requests, e.g. TTL deletion).
Only the simulator pays for this, and only while an observer is registered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from moto.dynamodb.models import dynamodb_backends

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})

Item = dict[str, Any]


@dataclass(frozen=True)
class Caller:
    """A function invocation: the function's physical name and an id unique to the invocation."""

    function: str
    invocation: str


@dataclass(frozen=True)
class ItemChange:
    table: str
    key: str  # the key's values, "hash" or "hash|range"
    before: Item | None  # attribute-value JSON ({"S": ...}), None when absent
    after: Item | None


@dataclass(frozen=True)
class Write:
    operation: str
    caller: Caller | None
    changes: tuple[ItemChange, ...]
    ok: bool  # False: the request failed (its changes are then empty, as AWS guarantees)


Observer = Callable[[Write], None]

_current = threading.local()


def current_caller() -> Caller | None:
    return getattr(_current, "caller", None)


def set_caller(caller: Caller | None) -> None:
    _current.caller = caller


def _targets(operation: str, body: dict[str, Any]) -> Iterator[tuple[str, Item | None, Item | None]]:
    """(table, key, item) for every item the request may write (the item when only it is given)."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        yield body["TableName"], body.get("Key"), body.get("Item")
    elif operation == "TransactWriteItems":
        for entry in body.get("TransactItems", []):
            for kind in ("Put", "Update", "Delete"):
                if kind in entry:
                    yield entry[kind]["TableName"], entry[kind].get("Key"), entry[kind].get("Item")
    elif operation == "BatchWriteItem":
        for table, requests in body.get("RequestItems", {}).items():
            for request in requests:
                if "PutRequest" in request:
                    yield table, None, request["PutRequest"]["Item"]
                elif "DeleteRequest" in request:
                    yield table, request["DeleteRequest"]["Key"], None


class Snapshot:
    """Reads items straight from moto's backend (inside the request lock)."""

    def __init__(self, account: str, region: str) -> None:
        self._backend = dynamodb_backends[account][region]

    def key_of(self, table: str, key: Item | None, item: Item | None) -> Item | None:
        if key is not None:
            return key
        if item is None:
            return None
        try:
            schema = self._backend.get_table(table)
        except Exception:  # noqa: BLE001 - an unknown table: the request itself will fail
            return None
        names = [schema.hash_key_attr, *([schema.range_key_attr] if schema.range_key_attr else [])]
        return {name: item[name] for name in names if name in item}

    def read(self, table: str, key: Item) -> Item | None:
        try:
            found = self._backend.get_item(table, key)
        except Exception:  # noqa: BLE001 - a malformed key or unknown table: nothing to see
            return None
        return None if found is None else dict(found.to_json()["Attributes"])


def _key_text(key: Item) -> str:
    return "|".join(str(next(iter(value.values()))) for _, value in sorted(key.items()))


def observed(
    snapshot: Snapshot, operation: str, raw_body: Any, run: Callable[[], Any], observers: list[Observer]
) -> Any:
    """Run the request `run()`; tell `observers` what it changed."""
    if not observers or operation not in WRITES:
        return run()
    try:
        body = json.loads(raw_body) if isinstance(raw_body, str | bytes) else dict(raw_body or {})
    except ValueError:
        return run()
    targets = []
    for table, key, item in _targets(operation, body):
        resolved = snapshot.key_of(table, key, item)
        if resolved:
            targets.append((table, resolved, snapshot.read(table, resolved)))
    response = run()
    changes = []
    for table, key, before in targets:
        after = snapshot.read(table, key)
        if after != before:
            changes.append(ItemChange(table, _key_text(key), before, after))
    status = response[0] if isinstance(response, tuple) else 200
    write = Write(operation, current_caller(), tuple(changes), ok=int(status) < 300)
    for observer in observers:
        observer(write)
    return response
