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
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from bench.calls import Calls
from bench.meter import (
    POWERTOOLS_ENV,
    LogBytes,
    Meter,
    stdout_to,
)

RESULTS = Path(__file__).resolve().parent / "results"
STAGE = "local"
ORDER = {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]}
# What Lambda writes itself per invocation (START, END and REPORT lines with the request id,
# durations, memory and, with active tracing, the trace id): about 330 bytes. Modelled.
PLATFORM_LOG_BYTES = 330


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
