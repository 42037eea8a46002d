"""What a whole order costs on each workflow type: run happy-path orders through the real handlers,
count what they do, price it at list prices, with and without the reliability layer.

One command, one run: the same orders through a Standard stage (`local`) and an Express stage
(`local-express`), side by side: Standard with the layer, Express with the layer, Express without
it (and Standard without it, for the layer's share there).

Orders go through the in-process cloud (``simulator``: moto, the synthesized assembly, the real
handler code; one order at a time, each settled before the next; ``bench.cost_measure`` runs
them). What is MEASURED there:

- every AWS call a handler makes (``bench.calls``, the counter bench/roundtrips.py uses too, on
  the default session, counted when ``simulator.observe.current_caller()`` names a function, so
  the simulator's own polling and waiting is not counted), by function and operation, and the
  items each DynamoDB call writes or returns;
- every byte the handlers write to stdout (file descriptor 1 redirected to a file): Powertools log
  lines and EMF documents, split into the layer's (decision lines, metric documents) and the app's;
- every event of every execution (the interpreter's history, which on Express no API gives), as
  the state machine's log group receives it at its template's level
  (``bench.cost_measure.state_machine_log``): Standard logs ALL, Express ERROR
  (infra/constructs/workflow.py), which on a happy path is none.

What is MODELLED: capacity units from the items (each item below 1 KB, which the run checks, so a
write is 1 WRU, 2 in a transaction; a read is 1 RRU per 4 KB returned, half for an eventually
consistent one); Lambda's own START/END/REPORT lines (``PLATFORM_LOG_BYTES``); a log record's
shape (``bench.cost_measure.LOG_RECORD``: the event's details without input and output, as
`IncludeExecutionData: false` leaves them); invocations, GB-seconds (on Express the worker waits
for the execution), state transitions or Express requests and billed GB-seconds, SQS and API
Gateway requests from the synthesized templates (``scale.sheet.per_order``, the model ``make
scale-sheet`` prices with); prices from ``ops.costs``. Without the layer: no call or item on the
idempotency and fence tables, the business item of a transaction that exists only for the fence
written at the plain rate (two or more business writes keep their transaction), a business item
that carries a fence record (``Write.carries_record``) without the units the record's bytes add,
no decision lines or metric documents; everything else as measured (the cheapest app that could do
the same work unguarded). The layer's extra Lambda duration (its calls' milliseconds) is not
priced: about $0.2 per million orders at 5 ms a call.

Usage: ``PYTHONPATH=functions:. python bench/cost.py [--orders N]`` (``make bench``); prints the
tables and writes ``bench/results/cost.md`` and ``.json``. It redirects file descriptor 1, so run
it as its own process (tests do: pytest's capture holds the loggers' streams).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.cost_measure import STAGES, Measured, logged_bytes, measure
from bench.record import command, written_by

RESULTS = Path(__file__).resolve().parent / "results"
# What Lambda writes itself per invocation (START, END and REPORT lines with the request id,
# durations, memory and, with active tracing, the trace id): about 330 bytes. Modelled.
PLATFORM_LOG_BYTES = 330
# What the issue asks of Express with the layer: at most this share of Standard with the layer.
EXPRESS_BAR = 0.25


def usage_per_order(measured: Measured, lambda_requests: float) -> dict[str, float]:
    """An order's DynamoDB units and log bytes with the layer, as measured (Lambda's own lines
    modelled per invocation; the state machine's log group at its level): what
    bench/results/cost.json gives `make scale-sheet`."""
    log = measured.log
    handlers = log["decision_line_bytes"] + log["metric_document_bytes"] + log["other_bytes"]
    return {
        "write_units": measured.wru_per_order,
        "read_units": measured.rru_per_order,
        "busiest_table_wru_share": measured.busiest_table_wru_share,
        "log_bytes": handlers + lambda_requests * PLATFORM_LOG_BYTES + logged_bytes(measured),
    }


def measured_usage(results: Path = RESULTS) -> dict[str, float]:
    """The last `make bench`'s Standard ``usage_per_order`` (``results``/cost.json)."""
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
        "log_gb": (log["other_bytes"] + platform + logged_bytes(measured)) / 1e9,
    }
    return {"with the layer": cost_per_order(with_layer), "without the layer": cost_per_order(without_layer)}


@dataclass(frozen=True)
class Priced:
    """One workflow type's run: what was measured, what the templates say, and the prices."""

    kind: str  # Standard or Express
    stage: str
    measured: Measured
    modelled: dict[str, float]
    usage: dict[str, float]
    costs: dict[str, dict[str, float]]

    def total(self, column: str) -> float:
        return sum(self.costs[column].values())

    @property
    def layer_share(self) -> float:
        """The layer's share of the order's cost with the layer."""
        with_layer = self.total("with the layer")
        return (with_layer - self.total("without the layer")) / with_layer


def run(orders: int, stage: str, kind: str) -> Priced:
    from scale.sheet import modelled_per_order  # noqa: PLC0415 - the scale sheet's model

    measured, topology = measure(orders, stage)
    modelled = modelled_per_order(topology)
    usage = usage_per_order(measured, modelled["lambda_requests"])
    return Priced(kind, stage, measured, modelled, usage, price(measured, modelled, usage))


def _money(dollars: float) -> str:
    return f"${dollars * 1e6:,.2f}"


def render(standard: Priced, express: Priced) -> str:
    columns = [
        ("Standard, with the layer", standard, "with the layer"),
        ("Express, with the layer", express, "with the layer"),
        ("Express, without the layer", express, "without the layer"),
        ("Standard, without the layer", standard, "without the layer"),
    ]
    ratio = express.total("with the layer") / standard.total("with the layer")
    lines = [
        f"Happy-path orders through the real handlers: {standard.measured.orders} on each type "
        "(one item each).",
        "",
        "| per million orders, list prices (US East) | " + " | ".join(c[0] for c in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    lines += [
        f"| {service} | " + " | ".join(_money(p.costs[col][service]) for _, p, col in columns) + " |"
        for service in standard.costs["with the layer"]
    ]
    lines += [
        "| **total** | " + " | ".join(f"**{_money(p.total(col))}**" for _, p, col in columns) + " |",
        "",
        f"**Express with the layer costs {ratio:.1%} of Standard with the layer** "
        f"({_money(express.total('with the layer'))} vs {_money(standard.total('with the layer'))} per "
        f"million orders; the bar: at most {EXPRESS_BAR:.0%}: "
        f"{'met' if ratio <= EXPRESS_BAR else 'NOT met'}).",
        "",
        f"The layer's share (log bytes priced in): **{express.layer_share:.1%}** of an Express order "
        f"({_money(express.total('with the layer') - express.total('without the layer'))} per million), "
        f"{standard.layer_share:.1%} of a Standard one "
        f"({_money(standard.total('with the layer') - standard.total('without the layer'))} per million).",
        "",
        "Step Functions: Standard "
        f"{standard.modelled['transitions']:g} state transitions an order; Express 1 request and "
        f"{express.modelled['express_gb_seconds']:g} billed GB-seconds an order (64 MB x its happy path "
        "rounded up to 100 ms). The state machine's log group: Standard logs ALL "
        f"({standard.measured.state_machine_log['events']:g} events, "
        f"{standard.measured.state_machine_log['bytes_all']:,.0f} bytes an order), Express ERROR "
        f"({express.measured.state_machine_log['error_events']:g} events on a happy path; at ALL it "
        f"would take {express.measured.state_machine_log['bytes_all']:,.0f} bytes, "
        f"{_money(express.measured.state_machine_log['bytes_all'] / 1e9 * _log_price())} per million). "
        "Lambda on Express: the worker takes one record an invocation and waits for the execution.",
        "",
        "| per order (measured) | Standard | Express |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {what} | {a} | {b} |" for what, a, b in _measured_rows(standard.measured, express.measured)]
    lines += [
        "",
        "Calls per order by function:",
        "",
        "| function | call | Standard | Express |",
        "| --- | --- | ---: | ---: |",
    ]
    keys = sorted(set(standard.measured.calls_per_order) | set(express.measured.calls_per_order))
    for key in keys:
        function, call = key.split(" ")
        counts = (p.measured.calls_per_order.get(key, 0) for p in (standard, express))
        lines.append(f"| {function} | {call} | " + " | ".join(f"{n:g}" for n in counts) + " |")
    return "\n".join(lines) + "\n"


def _log_price() -> float:
    from ops.costs import price as list_price  # noqa: PLC0415

    return list_price("logs_ingested_gb")


def _measured_rows(standard: Measured, express: Measured) -> list[tuple[str, str, str]]:
    def row(what: str, value: Any) -> tuple[str, str, str]:
        return what, *(value(m) for m in (standard, express))

    def layer_bytes(m: Measured) -> float:
        return m.log["decision_line_bytes"] + m.log["metric_document_bytes"]

    return [
        row("AWS calls by handlers", lambda m: f"{sum(m.calls_per_order.values()):g}"),
        row("of which on the idempotency and fence tables", lambda m: f"{m.layer_calls_per_order:g}"),
        row("DynamoDB write units (modelled from the items written)", lambda m: f"{m.wru_per_order:g}"),
        row(
            "of which the layer's (its items, records carried by business items, transaction premium)",
            lambda m: f"{m.layer_wru_per_order + m.transaction_premium_wru_per_order:g}",
        ),
        row("DynamoDB read units (modelled from the items returned)", lambda m: f"{m.rru_per_order:g}"),
        row("of which the layer's", lambda m: f"{m.layer_rru_per_order:g}"),
        row("decision log lines", lambda m: f"{m.log['decision_lines']:g}"),
        row("EMF metric documents", lambda m: f"{m.log['metric_documents']:g}"),
        row("log bytes written by the handlers", lambda m: f"{layer_bytes(m) + m.log['other_bytes']:,.0f}"),
        row("of which the layer's (decision lines + metric documents)", lambda m: f"{layer_bytes(m):,.0f}"),
        row("state machine log events at its level: level, events / bytes", _logged),
        row("largest DynamoDB item seen (bytes; units assume < 1 KB)", lambda m: f"{m.largest_item_bytes}"),
    ]


def _logged(measured: Measured) -> str:
    machine = measured.state_machine_log
    events = machine["events"] if machine["level"] == "ALL" else machine["error_events"]
    return f"{machine['level']}, {events:g} / {logged_bytes(measured):,.0f}"


def _priced_json(priced: Priced) -> dict[str, Any]:
    return {
        "stage": priced.stage,
        "measured": asdict(priced.measured),
        "modelled_per_order": priced.modelled,
        "usage_per_order": priced.usage,
        "cost_per_order": priced.costs,
        "layer_share": priced.layer_share,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where cost.md and cost.json go")
    args = parser.parse_args(argv)
    standard = run(args.orders, STAGES["Standard"], "Standard")
    express = run(args.orders, STAGES["Express"], "Express")
    table = render(standard, express)
    header = (
        "# What an order costs on Standard and on Express, with and without the reliability layer\n\n"
        "`make bench` (bench/cost.py): calls, log bytes and the executions' events measured through "
        "the real handlers on the in-process cloud, a Standard stage and an Express stage in one run; "
        "capacity units, Lambda/Step Functions/SQS/API Gateway usage and Lambda's own log lines "
        "modelled (see the module docstring); list prices from lab/src/ops/costs.py.\n\n"
        + written_by("bench/cost.py", argv)
    )
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "cost.md").write_text(header + table)
    ratio = express.total("with the layer") / standard.total("with the layer")
    document = {
        "command": command("bench/cost.py", argv),
        # Standard's, as before: `make scale-sheet` reads usage_per_order
        "measured": asdict(standard.measured),
        "usage_per_order": standard.usage,
        "cost_per_order": standard.costs,
        "types": {"Standard": _priced_json(standard), "Express": _priced_json(express)},
        "express_share_of_standard": ratio,
    }
    (args.results / "cost.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
