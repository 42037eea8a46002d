"""The measuring half of bench/cost.py: happy-path runs of the service through the real handlers
on the in-process cloud (``simulator``), one at a time, each settled before the next, and what
they did: every AWS call a handler makes (``bench.calls``), the units of the items it touches and
the bytes it logs (``bench.meter``), and every event of every execution as the state machine's log
group receives it at its template's level. What these figures cost is bench/cost.py's.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from bench.calls import Calls
from bench.meter import POWERTOOLS_ENV, LogBytes, Meter, stdout_to
from ops.outcomes import outcomes, request_factory, starting_route
from ops.service import service

# The stage of each workflow type the orders run through (cdk.json); Standard's figures also feed
# `make scale-sheet` (cost.json's top-level `usage_per_order`).
STAGES = {"Standard": "local", "Express": "local-express"}
STAGE = STAGES["Standard"]
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
