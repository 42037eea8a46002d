"""What `bench/cost.py` counts while orders run: the capacity units of the items each DynamoDB
call writes or returns (``Meter``, from ``bench.calls``' recorded calls), split into the layer's
and the app's, and the bytes the handlers write to stdout (``LogBytes``, ``stdout_to``)."""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.calls import Call

WRU_BYTES, RRU_BYTES = 1024, 4096
# The tables whose calls and items are the layer's (settings of orders.config.Settings).
LAYER_TABLE_SETTINGS = ("idempotency_table", "fence_table")
# What every function gets on AWS (reliability/cdk/app_stack.py), so Powertools writes what it writes there.
POWERTOOLS_ENV = {
    "POWERTOOLS_SERVICE_NAME": "retrysafe",
    "POWERTOOLS_METRICS_NAMESPACE": "retrysafe",
    "POWERTOOLS_TRACE_DISABLED": "1",  # traces are not logs; the in-process run has no daemon
}
_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})


def item_bytes(item: Mapping[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (strings and numbers by their text)."""

    def value_bytes(value: Mapping[str, Any]) -> int:
        ((kind, inner),) = value.items()
        if kind in ("M",):
            return 3 + sum(len(k) + value_bytes(v) for k, v in inner.items())
        if kind == "L":
            return 3 + sum(1 + value_bytes(v) for v in inner)
        if kind in ("SS", "NS", "BS"):
            return sum(len(str(v)) for v in inner)
        return 1 if kind in ("BOOL", "NULL") else len(str(inner))

    return sum(len(name) + value_bytes(value) for name, value in item.items())


def written_bytes(body: Mapping[str, Any]) -> tuple[int, int]:
    """The bytes a write puts on its item, and how many of them are a fence record it carries
    (``reliability.record.carried_entry``: the values ``:id`` and ``:c<n>``). A Put: its item; an
    Update: its key plus each value given, named by its ``#x`` placeholder's attribute for ``:x``."""
    if "Item" in body:
        return item_bytes(body["Item"]), 0
    names = body.get("ExpressionAttributeNames", {})
    carried = "fencing_token" in names.values() and ":id" in body.get("ExpressionAttributeValues", {})
    total, record = item_bytes(body.get("Key") or {}), 0
    for placeholder, value in body.get("ExpressionAttributeValues", {}).items():
        size = item_bytes({names.get("#" + placeholder[1:], placeholder[1:]): value})
        total += size
        if carried and (placeholder == ":id" or placeholder.startswith(":c")):
            record += size
    return total, record


@dataclass
class Usage:
    """What the handlers did over the run: calls and capacity units, by function."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)  # (function, Service.Operation)
    wru: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # by function
    wru_by_table: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    rru: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    layer_calls: int = 0
    layer_wru: float = 0.0
    layer_rru: float = 0.0
    # A business item written in a transaction only the fence needs: 1 WRU above the plain write.
    transaction_premium_wru: float = 0.0
    largest_item: int = 0


class Meter:
    """The capacity the counted calls (``bench.calls``) take: what a DynamoDB call's parameters
    write, what a read's answer returned; the layer's share by table."""

    def __init__(self, layer_tables: set[str]) -> None:
        self.usage = Usage()
        self._layer_tables = layer_tables

    def add(self, call: Call) -> None:
        function, params = call.function, call.params
        self.usage.calls[(function, f"{call.service}.{call.operation}")] += 1
        if call.service != "dynamodb":
            return
        if call.operation == "TransactWriteItems":
            actions = [next(iter(action.items())) for action in params["TransactItems"]]
            # A transaction of two or more business writes would be one without the layer too
            # (all or nothing); with one, it exists for the fence: its premium is the layer's.
            business = [kind for kind, body in actions if body["TableName"] not in self._layer_tables]
            premium = len([kind for kind in business if kind != "ConditionCheck"]) < 2
            for _kind, body in actions:
                self._write(function, body, transactional=True, premium=premium)
            self.usage.layer_calls += len(business) < len(actions)
            return
        if call.operation in ("PutItem", "UpdateItem", "DeleteItem"):
            self._write(function, params, transactional=False, premium=False)
        elif call.operation in _READS and call.response is not None:
            self._reads(function, params, call.response)
        tables = [params.get("TableName"), *params.get("RequestItems", {})]
        self.usage.layer_calls += any(table in self._layer_tables for table in tables)

    def _write(self, function: str, body: Mapping[str, Any], *, transactional: bool, premium: bool) -> None:
        size, record = written_bytes(body)
        self.usage.largest_item = max(self.usage.largest_item, size)
        rate = 2.0 if transactional else 1.0
        wru = rate * max(1, math.ceil(size / WRU_BYTES))
        self.usage.wru[function] += wru
        self.usage.wru_by_table[body["TableName"]] += wru
        if body["TableName"] in self._layer_tables:
            self.usage.layer_wru += wru
            return
        # A business item that carries a fence record: the units its record's bytes add are the layer's
        self.usage.layer_wru += wru - rate * max(1, math.ceil((size - record) / WRU_BYTES))
        if transactional and premium:
            self.usage.transaction_premium_wru += wru / 2

    def _reads(self, function: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> None:
        if "RequestItems" in params:  # BatchGetItem: each table's items, each rounded up on its own
            for table, items in parsed.get("Responses", {}).items():
                consistent = params["RequestItems"][table].get("ConsistentRead")
                for item in items:
                    self._read(function, table, [item], consistent=consistent)
            return
        items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
        self._read(function, params.get("TableName"), items, consistent=params.get("ConsistentRead"))

    def _read(self, function: str, table: str | None, items: list[Any], *, consistent: bool | None) -> None:
        sizes = [item_bytes(item) for item in items]
        self.usage.largest_item = max([self.usage.largest_item, *sizes])
        rru = max(1, math.ceil(sum(sizes) / RRU_BYTES)) * (1.0 if consistent else 0.5)
        self.usage.rru[function] += rru
        if table in self._layer_tables:
            self.usage.layer_rru += rru


@dataclass
class LogBytes:
    decision_lines: int = 0
    decision_line_bytes: int = 0
    metric_documents: int = 0
    metric_document_bytes: int = 0
    other_lines: int = 0
    other_bytes: int = 0
    lines_by_function: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, text: str) -> LogBytes:
        found = cls()
        for raw in text.splitlines(keepends=True):
            size = len(raw.encode())
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if isinstance(line, dict) and "_aws" in line:
                found.metric_documents += 1
                found.metric_document_bytes += size
            elif isinstance(line, dict) and "decision" in line:
                found.decision_lines += 1
                found.decision_line_bytes += size
                found.lines_by_function[str(line.get("function_name"))] += 1
            elif raw.strip():
                found.other_lines += 1
                found.other_bytes += size
        return found


@contextmanager
def stdout_to(path: Path) -> Iterator[None]:
    """Everything written to file descriptor 1 (Powertools' stream, print) goes to ``path``."""
    sys.stdout.flush()
    saved = os.dup(1)
    with path.open("wb") as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
