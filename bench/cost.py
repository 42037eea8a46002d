"""What a whole order costs on each workflow type: run happy-path orders through the real handlers,
count what they do, price it at list prices, with and without the reliability layer.

One command, one run: the same orders through a Standard stage (`local`) and an Express stage
(`local-express`), side by side: Standard with the layer, Express with the layer, Express without
it (and Standard without it, for the layer's share there).

Orders go through the in-process cloud (``simulator``: moto, the synthesized assembly, the real
handler code; one order at a time, each settled before the next). What is MEASURED there:

- every AWS call a handler makes (``bench.calls``, the counter bench/roundtrips.py uses too, on
  the default session, counted when ``simulator.observe.current_caller()`` names a function, so
  the simulator's own polling and waiting is not counted), by function and operation, and the
  items each DynamoDB call writes or returns;
- every byte the handlers write to stdout (file descriptor 1 redirected to a file): Powertools log
  lines and EMF documents, split into the layer's (decision lines, metric documents) and the app's;
- every event of every execution (the interpreter's history, which on Express no API gives), as
  the state machine's log group receives it at its template's level (``state_machine_log``):
  Standard logs ALL, Express ERROR (infra/constructs/workflow.py), which on a happy path is none.

What is MODELLED: capacity units from the items (each item below 1 KB, which the run checks, so a
write is 1 WRU, 2 in a transaction; a read is 1 RRU per 4 KB returned, half for an eventually
consistent one); Lambda's own START/END/REPORT lines (``PLATFORM_LOG_BYTES``); a log record's
shape (``LOG_RECORD``: the event's details without input and output, as `IncludeExecutionData:
false` leaves them); invocations, GB-seconds (on Express the worker waits for the execution),
state transitions or Express requests and billed GB-seconds, SQS and API Gateway requests from the
synthesized templates (``scale.sheet.per_order``, the model ``make scale-sheet`` prices with);
prices from ``ops.costs``. Without the layer: no call or item on the idempotency and fence
tables, the business item of a transaction that exists only for the fence written at the plain
rate (two or more business writes keep their transaction), a business item that carries a fence
record (``Write.carries_record``) without the units the record's bytes add, no decision lines or
metric documents; everything else as measured (the cheapest app that could do the same work
unguarded). The layer's extra Lambda duration (its calls' milliseconds) is not priced: about $0.2
per million orders at 5 ms a call.

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
from bench.record import command, written_by
from ops.outcomes import outcomes, request_factory, starting_route
from ops.service import service

RESULTS = Path(__file__).resolve().parent / "results"
# The stage of each workflow type the orders run through (cdk.json); Standard's figures also feed
# `make scale-sheet` (cost.json's top-level `usage_per_order`).
STAGES = {"Standard": "local", "Express": "local-express"}
STAGE = STAGES["Standard"]
# What Lambda writes itself per invocation (START, END and REPORT lines with the request id,
# durations, memory and, with active tracing, the trace id): about 330 bytes. Modelled.
PLATFORM_LOG_BYTES = 330
# One execution event as a Step Functions log group record (its fields, per the Step Functions
# guide's "Log levels" page); `details` is the event's details without input and output.
LOG_RECORD = (
    "id",
    "type",
    "details",
    "previous_event_id",
    "event_timestamp",
    "execution_arn",
    "redrive_count",
)
# The events a log group at ERROR receives (the guide's table: failures, aborts and time-outs).
_ERROR_EVENT = ("Failed", "Aborted", "TimedOut")
_EXECUTION_DATA = ("input", "output", "inputDetails", "outputDetails", "parameters")
# What the issue asks of Express with the layer: at most this share of Standard with the layer.
EXPRESS_BAR = 0.25


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
    # per order: the executions' events and the bytes their log records take, at ALL and at ERROR,
    # and the level the template logs at (ALL or ERROR)
    state_machine_log: dict[str, Any]


def measure(orders: int, stage: str = STAGE) -> tuple[Measured, Any]:
    """Run ``orders`` happy-path orders, one at a time, through the in-process cloud of ``stage``."""
    environment = {**POWERTOOLS_ENV, "AWS_DEFAULT_REGION": "us-east-1"}
    environment |= {
        name: os.environ.get(name, "bench") for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    }
    with mock.patch.dict(os.environ, environment):
        return _measure(orders, stage)


def _measure(orders: int, stage: str) -> tuple[Measured, Any]:
    import boto3  # noqa: PLC0415 - after the environment is set

    from emulator.synth import synthesize  # noqa: PLC0415
    from scale.topology import read  # noqa: PLC0415
    from simulator.cloud import running_cloud  # noqa: PLC0415

    # Each order is the service's request for its happy outcome (its proof's `request`)
    declared = service()
    request, happy = request_factory(declared), outcomes(declared)[0].name
    starting = starting_route(declared)
    assembly = synthesize(stage)
    with tempfile.TemporaryDirectory(prefix="retrysafe-cost-") as tmp, running_cloud(assembly) as cloud:
        layer_tables = {
            spec.environment[var]
            for spec in cloud.functions.values()
            for var in ("IDEMPOTENCY_TABLE", "FENCE_TABLE")
            if spec.environment.get(var)
        }
        short = {name: name.removeprefix(f"retrysafe-{stage}-") for name in cloud.functions}

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
                    "POST",
                    starting.path,
                    body=request(happy, number),
                    headers={"Idempotency-Key": f"bench-{number}"},
                )
                if response.status != 202:
                    raise RuntimeError(f"order {number}: {response.status} {response.body}")
                cloud.settle()
        log = LogBytes.of(captured.read_text())
        statuses = [execution["status"] for execution in cloud.executions()]
        if statuses != ["SUCCEEDED"] * orders:
            raise RuntimeError(f"not every order completed: {statuses}")
        machine_log = state_machine_log(cloud, orders)
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
        state_machine_log=machine_log,
    )
    return measured, read(assembly, stage)


def state_machine_log(cloud: Any, orders: int) -> dict[str, Any]:
    """Per order: the executions' events and their log records' bytes at ALL and at ERROR, read
    from the interpreter (the same for both types; on Express no API gives them), and the level
    the template's LoggingConfiguration names."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends  # noqa: PLC0415

    from emulator.templates import resources_of_type  # noqa: PLC0415
    from simulator.events import ACCOUNT, REGION  # noqa: PLC0415

    (machine,) = resources_of_type(cloud.app_template, "AWS::StepFunctions::StateMachine").values()
    backend = stepfunctions_parser_backends[ACCOUNT][REGION]
    executions: list[Any] = backend.describe_state_machine(cloud.outputs["StateMachineArn"]).executions
    every, errors = [], []
    for execution in executions:
        for event in execution.to_history_output()["events"]:
            record = log_record(event, str(execution.execution_arn))
            size = len(json.dumps(record, default=str, separators=(",", ":")).encode()) + 1
            every.append(size)
            if str(event["type"]).endswith(_ERROR_EVENT) or event["type"] == "FailStateEntered":
                errors.append(size)
    return {
        "level": machine["Properties"]["LoggingConfiguration"]["Level"],
        "events": len(every) / orders,
        "bytes_all": sum(every) / orders,
        "error_events": len(errors) / orders,
        "bytes_error": sum(errors) / orders,
    }


def log_record(event: dict[str, Any], execution_arn: str) -> dict[str, Any]:
    """A history event as a Step Functions log record without execution data (``LOG_RECORD``)."""
    details: dict[str, Any] = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
    timestamp = event["timestamp"]
    return dict(
        zip(
            LOG_RECORD,
            (
                str(event["id"]),
                str(event["type"]),
                {k: v for k, v in details.items() if k not in _EXECUTION_DATA},
                str(event.get("previousEventId", 0)),
                str(int(timestamp.timestamp() * 1000)) if hasattr(timestamp, "timestamp") else str(timestamp),
                execution_arn,
                "0",
            ),
            strict=True,
        )
    )


def logged_bytes(measured: Measured) -> float:
    """The bytes an order's executions put in the state machine's log group at its level."""
    machine = measured.state_machine_log
    return float(machine["bytes_all"] if machine["level"] == "ALL" else machine["bytes_error"])


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
