"""The local cloud's moto patches for DynamoDB's hot paths (14-15): flat cost as data grows.

`localcloud.patches` applies them with the others; the simulator wraps its own moto with
`transactions_by_item` and `query_by_partition`.
"""

from __future__ import annotations

import copy
import inspect
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.exceptions import MockValidationException, ResourceNotFoundException
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

# 14. moto's TransactWriteItems deep-copies every table it names before its first write, so that a
#     cancelled transaction can swap the copies back in: O(table) per transaction (~1.7 ms on an
#     empty table, ~72 ms at 2,000 items), and everything transactional slowed down as the local
#     cloud's data grew. Here the transaction snapshots only the items it names (at most 100) and a
#     cancelled one puts them back (and drops the stream records it added); moto's own backup is
#     taken by reference (a Table deep-copies to itself for the length of the call), so its
#     rollback swaps each table for itself. The lock keeps that switch to this call: in the server
#     every DynamoDB request is serialized anyway (8.), so it costs nothing there.
_ItemSnapshot = tuple[Table, DynamoType, DynamoType | None, Item | None]
_transaction_lock = threading.Lock()


def _same_table(table: Table, _memo: dict[int, Any]) -> Table:
    return table


def _touched_items(backend: Any, transact_items: list[dict[str, Any]]) -> list[_ItemSnapshot]:
    """A copy of each item the transaction names, as it is now (None: absent)."""
    snapshots: list[_ItemSnapshot] = []
    for entry in transact_items:
        for op_type, op in entry.items():
            try:
                table = backend.get_table(op.get("TableName"))
                key = op.get("Item") if op_type == "Put" else op.get("Key")
                hash_key, range_key = backend.get_keys_value(table, key or {})
            except (ResourceNotFoundException, MockValidationException):
                continue  # moto refuses this entry before it writes anything
            current = table.get_item(hash_key, range_key)
            snapshots.append((table, hash_key, range_key, copy.deepcopy(current)))
    return snapshots


def _put_back(snapshots: list[_ItemSnapshot], stream_lengths: dict[Table, int]) -> None:
    for table, hash_key, range_key, item in reversed(snapshots):
        if range_key is None:
            if item is None:
                table.items.pop(hash_key, None)
            else:
                table.items[hash_key] = item  # type: ignore[assignment]  # moto keeps a hash-only item there
            continue
        partition = table.items[hash_key]
        if item is not None:
            partition[range_key] = item
            continue
        partition.pop(range_key, None)
        if not partition:
            del table.items[hash_key]
    for table, length in stream_lengths.items():
        if table.stream_shard is not None:
            del table.stream_shard.items[length:]


def transactions_by_item(original: Callable[..., None]) -> Callable[..., None]:
    """moto's `DynamoDBBackend.transact_write_items` (`original`) with patch 14 (the simulator's too)."""

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _transaction_lock:
            snapshots = _touched_items(self, transact_items)
            streams = {t: len(t.stream_shard.items) for t, *_ in snapshots if t.stream_shard is not None}
            Table.__deepcopy__ = _same_table  # type: ignore[attr-defined]
            try:
                original(self, transact_items)
            except BaseException:
                _put_back(snapshots, streams)
                raise
            finally:
                del Table.__deepcopy__  # type: ignore[attr-defined]

    return transact_write_items


# 15. moto's Query of a table (not an index) lists every item of the table, sorts them all by
#     (hash, range) key (`Table.all_items`: n log n DynamoType comparisons) and then keeps the
#     queried partition: ~8 ms at 2,000 items for a one-partition query (GetItem ~0.2 ms), and
#     every step's read of its entity slowed down with the data. Here that listing is the queried
#     partition only (`Table.items[hash_key]`, where moto stores it); moto's query then sorts,
#     pages and filters it as before. Index queries and Scan still list the whole table.
_query_partition = threading.local()  # the (table, hash key) a base-table query on this thread lists


def query_by_partition(
    original_query: Callable[..., Any], original_all_items: Callable[..., list[Item]]
) -> tuple[Callable[..., Any], Callable[..., list[Item]]]:
    """moto's `Table.query` and `Table.all_items` with patch 15 (the simulator's too)."""
    query_signature = inspect.signature(original_query)

    def all_items(self: Table) -> list[Item]:
        scope = getattr(_query_partition, "scope", None)
        if scope is None or scope[0] is not self:
            return original_all_items(self)
        stored = self.items.get(scope[1])
        if stored is None:
            return []
        return list(stored.values()) if self.range_key_attr else [stored]

    def query(self: Table, *args: Any, **kwargs: Any) -> Any:
        arguments = query_signature.bind(self, *args, **kwargs).arguments
        if arguments.get("index_name") or arguments.get("hash_key") is None:
            return original_query(self, *args, **kwargs)
        _query_partition.scope = (self, arguments["hash_key"])
        try:
            return original_query(self, *args, **kwargs)
        finally:
            _query_partition.scope = None

    return query, all_items


def apply(originals: dict[str, Any]) -> None:
    """Patch moto's DynamoDB; what it replaces goes into `originals` for `restore`."""
    backend_cls = dynamodb_models.DynamoDBBackend
    originals["transact_write_items"] = backend_cls.transact_write_items
    backend_cls.transact_write_items = transactions_by_item(backend_cls.transact_write_items)  # type: ignore[method-assign]
    originals["table_query"] = Table.query
    originals["table_all_items"] = Table.all_items
    Table.query, Table.all_items = query_by_partition(Table.query, Table.all_items)  # type: ignore[method-assign]


def restore(originals: dict[str, Any]) -> None:
    dynamodb_models.DynamoDBBackend.transact_write_items = originals.pop("transact_write_items")  # type: ignore[method-assign]
    Table.query = originals.pop("table_query")  # type: ignore[method-assign]
    Table.all_items = originals.pop("table_all_items")  # type: ignore[method-assign]
