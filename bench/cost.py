"""What a whole order costs: run happy-path orders through the real handlers, count what they do,
price it at list prices, with and without the reliability layer.

Orders go through the in-process cloud (``simulator``: moto, the synthesized assembly, the real
handler code; one order at a time, each settled before the next). What is MEASURED there:

- every AWS call a handler makes (``bench.calls``, the counter bench/roundtrips.py uses too, on
  the default session, counted when ``simulator.observe.current_caller()`` names a function, so
  the simulator's own polling and waiting is not counted), by function and operation, and the
  items each DynamoDB call writes or returns;
- every byte the handlers write to stdout (file descriptor 1 redirected to a file): Powertools log
  lines and EMF documents, split into the layer's (decision lines, metric documents) and the app's.

What is MODELLED: capacity units from the items (each item below 1 KB, which the run checks, so a
write is 1 WRU, 2 in a transaction; a read is 1 RRU per 4 KB returned, half for an eventually
consistent one); Lambda's own START/END/REPORT lines (``PLATFORM_LOG_BYTES``); invocations,
GB-seconds, state transitions, SQS and API Gateway requests from the synthesized templates
(``scale.sheet.per_order``, the model ``make scale-sheet`` prices with); prices from
``ops.costs``. Without the layer: no call or item on the idempotency and fence tables, the
business item of a transaction that exists only for the fence written at the plain rate (two or
more business writes keep their transaction), a business item that carries a fence record
(``Write.carries_record``) without the units the record's bytes add, no decision lines or metric
documents;
everything else as measured (the cheapest app that could do the same work unguarded). The
layer's extra Lambda duration (its calls' milliseconds) is not priced: about $0.2 per million
orders at 5 ms a call.

Usage: ``PYTHONPATH=functions:. python bench/cost.py [--orders N]`` (``make bench``); prints the
tables and writes ``bench/results/cost.md`` and ``.json``. It redirects file descriptor 1, so run
it as its own process (tests do: pytest's capture holds the loggers' streams).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from bench.calls import Call, Calls

RESULTS = Path(__file__).resolve().parent / "results"
STAGE = "local"
ORDER = {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]}
# What Lambda writes itself per invocation (START, END and REPORT lines with the request id,
# durations, memory and, with active tracing, the trace id): about 330 bytes. Modelled.
PLATFORM_LOG_BYTES = 330
WRU_BYTES, RRU_BYTES = 1024, 4096
# The tables whose calls and items are the layer's (settings of orders.config.Settings).
LAYER_TABLE_SETTINGS = ("idempotency_table", "fence_table")
# What every function gets on AWS (DEVELOPERS.md), so Powertools writes what it writes there.
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


@dataclass(frozen=True)
class Measured:
    orders: int
    calls_per_order: dict[str, float]  # "function Service.Operation" -> calls
    wru_per_order: float
    busiest_table_wru_share: float  # the largest share of the write units on one table
    rru_per_order: float
    layer_calls_per_order: float
    layer_wru_per_order: float
    layer_rru_per_order: float
    transaction_premium_wru_per_order: float
    largest_item_bytes: int
    log: dict[str, float]  # per order: lines, documents and bytes (the layer's and the app's)


def measure(orders: int) -> tuple[Measured, Any]:
    """Run ``orders`` happy-path orders, one at a time, through the in-process cloud."""
    environment = {**POWERTOOLS_ENV, "AWS_DEFAULT_REGION": "us-east-1"}
    environment |= {
        name: os.environ.get(name, "bench") for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    }
    with mock.patch.dict(os.environ, environment):
        return _measure(orders)


def _measure(orders: int) -> tuple[Measured, Any]:
    import boto3  # noqa: PLC0415 - after the environment is set

    from scale.topology import read  # noqa: PLC0415
    from simulator.cloud import running_cloud  # noqa: PLC0415
    from simulator.synth import synthesize  # noqa: PLC0415

    assembly = synthesize(STAGE)
    with tempfile.TemporaryDirectory(prefix="retrysafe-cost-") as tmp, running_cloud(assembly) as cloud:
        layer_tables = {
            spec.environment[var]
            for spec in cloud.functions.values()
            for var in ("IDEMPOTENCY_TABLE", "FENCE_TABLE")
            if spec.environment.get(var)
        }
        short = {name: name.removeprefix(f"retrysafe-{STAGE}-") for name in cloud.functions}

        def caller() -> str | None:
            from simulator.observe import current_caller  # noqa: PLC0415 - after the cloud is up

            found = current_caller()
            return short.get(found.function, found.function) if found else None

        calls = Calls(caller)
        captured = Path(tmp) / "stdout"
        # The handlers' clients come from boto3's default session (simulator.cloud.client), built
        # at their first call, after the hooks are on the session they copy their events from.
        with calls.attached(boto3._get_default_session().events), stdout_to(captured):
            for number in range(orders):
                response = cloud.api(
                    "POST", "/orders", body=ORDER, headers={"Idempotency-Key": f"bench-{number}"}
                )
                if response.status != 202:
                    raise RuntimeError(f"order {number}: {response.status} {response.body}")
                cloud.settle()
        log = LogBytes.of(captured.read_text())
        statuses = [execution["status"] for execution in cloud.executions()]
        if statuses != ["SUCCEEDED"] * orders:
            raise RuntimeError(f"not every order completed: {statuses}")
    meter = Meter(layer_tables)
    for call in calls.calls:
        meter.add(call)
    usage = meter.usage
    per = 1 / orders
    measured = Measured(
        orders=orders,
        calls_per_order={f"{fn} {op}": n * per for (fn, op), n in sorted(usage.calls.items())},
        wru_per_order=sum(usage.wru.values()) * per,
        busiest_table_wru_share=max(usage.wru_by_table.values()) / sum(usage.wru_by_table.values()),
        rru_per_order=sum(usage.rru.values()) * per,
        layer_calls_per_order=usage.layer_calls * per,
        layer_wru_per_order=usage.layer_wru * per,
        layer_rru_per_order=usage.layer_rru * per,
        transaction_premium_wru_per_order=usage.transaction_premium_wru * per,
        largest_item_bytes=usage.largest_item,
        log={
            "decision_lines": log.decision_lines * per,
            "decision_line_bytes": log.decision_line_bytes * per,
            "metric_documents": log.metric_documents * per,
            "metric_document_bytes": log.metric_document_bytes * per,
            "other_lines": log.other_lines * per,
            "other_bytes": log.other_bytes * per,
        },
    )
    return measured, read(assembly, STAGE)


def usage_per_order(measured: Measured, lambda_requests: float) -> dict[str, float]:
    """An order's DynamoDB units and log bytes with the layer, as measured (Lambda's own lines
    modelled per invocation): what bench/results/cost.json gives `make scale-sheet`."""
    log = measured.log
    handlers = log["decision_line_bytes"] + log["metric_document_bytes"] + log["other_bytes"]
    return {
        "write_units": measured.wru_per_order,
        "read_units": measured.rru_per_order,
        "busiest_table_wru_share": measured.busiest_table_wru_share,
        "log_bytes": handlers + lambda_requests * PLATFORM_LOG_BYTES,
    }


def measured_usage(results: Path = RESULTS) -> dict[str, float]:
    """The last `make bench`'s ``usage_per_order`` (``results``/cost.json)."""
    usage: dict[str, float] = json.loads((results / "cost.json").read_text())["usage_per_order"]
    return usage


def price(
    measured: Measured, modelled: dict[str, float], usage: dict[str, float]
) -> dict[str, dict[str, float]]:
    """Dollars per order by service, with the layer (``usage``, as measured) and without it."""
    from scale.sheet import cost_per_order  # noqa: PLC0415 - the scale sheet's prices

    platform = modelled["lambda_requests"] * PLATFORM_LOG_BYTES
    log = measured.log
    with_layer = modelled | {
        "write_units": usage["write_units"],
        "read_units": usage["read_units"],
        "log_gb": usage["log_bytes"] / 1e9,
    }
    without_layer = modelled | {
        "write_units": measured.wru_per_order
        - measured.layer_wru_per_order
        - measured.transaction_premium_wru_per_order,
        "read_units": measured.rru_per_order - measured.layer_rru_per_order,
        "log_gb": (log["other_bytes"] + platform) / 1e9,
    }
    return {"with the layer": cost_per_order(with_layer), "without the layer": cost_per_order(without_layer)}


def render(measured: Measured, costs: dict[str, dict[str, float]]) -> str:
    log = measured.log
    layer_bytes = log["decision_line_bytes"] + log["metric_document_bytes"]
    with_layer, without = (sum(costs[k].values()) for k in ("with the layer", "without the layer"))
    tax = (with_layer - without) / with_layer
    services = list(costs["with the layer"])
    lines = [
        f"Happy-path orders through the real handlers: {measured.orders} (one item each).",
        "",
        "| per order (measured) | value |",
        "| --- | ---: |",
        f"| AWS calls by handlers | {sum(measured.calls_per_order.values()):g} |",
        f"| of which on the idempotency and fence tables | {measured.layer_calls_per_order:g} |",
        f"| DynamoDB write units (modelled from the items written) | {measured.wru_per_order:g} |",
        f"| of which the layer's (its items, records carried by business items, transaction premium) | "
        f"{measured.layer_wru_per_order + measured.transaction_premium_wru_per_order:g} |",
        f"| DynamoDB read units (modelled from the items returned) | {measured.rru_per_order:g} |",
        f"| of which the layer's | {measured.layer_rru_per_order:g} |",
        f"| decision log lines | {log['decision_lines']:g} |",
        f"| EMF metric documents | {log['metric_documents']:g} |",
        f"| log bytes written by the handlers | {layer_bytes + log['other_bytes']:,.0f} |",
        f"| of which the layer's (decision lines + metric documents) | {layer_bytes:,.0f} |",
        f"| largest DynamoDB item seen (bytes; units assume < 1 KB) | {measured.largest_item_bytes} |",
        "",
        "| per million orders, list prices (US East) | with the layer | without the layer |",
        "| --- | ---: | ---: |",
    ]
    lines += [
        f"| {service} | ${costs['with the layer'][service] * 1e6:,.2f} | "
        f"${costs['without the layer'][service] * 1e6:,.2f} |"
        for service in services
    ]
    lines += [
        f"| **total** | **${with_layer * 1e6:,.2f}** | **${without * 1e6:,.2f}** |",
        "",
        f"Reliability tax (log bytes priced in): **{tax:.1%}** of the order's cost "
        f"(${(with_layer - without) * 1e6:,.2f} per million orders).",
        "",
        "Calls per order by function:",
        "",
        "| function | call | per order |",
        "| --- | --- | ---: |",
    ]
    lines += [
        f"| {key.split(' ')[0]} | {key.split(' ')[1]} | {n:g} |"
        for key, n in measured.calls_per_order.items()
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where cost.md and cost.json go")
    args = parser.parse_args(argv)
    from scale.sheet import modelled_per_order  # noqa: PLC0415 - the scale sheet's model

    measured, topology = measure(args.orders)
    modelled = modelled_per_order(topology)
    usage = usage_per_order(measured, modelled["lambda_requests"])
    costs = price(measured, modelled, usage)
    table = render(measured, costs)
    header = (
        "# What an order costs, with and without the reliability layer\n\n"
        "`make bench` (bench/cost.py): calls and log bytes measured through the real handlers on "
        "the in-process cloud; capacity units, Lambda/Step Functions/SQS/API Gateway usage and "
        "Lambda's own log lines modelled (see the module docstring); list prices from ops/costs.py.\n\n"
    )
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "cost.md").write_text(header + table)
    (args.results / "cost.json").write_text(
        json.dumps(
            {"measured": asdict(measured), "usage_per_order": usage, "cost_per_order": costs}, indent=2
        )
        + "\n"
    )
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
