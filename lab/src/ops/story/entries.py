"""One entity's timeline entries, from what its sources say: each function invocation's decisions
(a step attempt's outcome from its fence decisions and how it ended), the executions' starts,
redrives and ends, and the compensations a step's record implies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ops.story.logs import Invocation, line_time
from ops.story.model import Entry, Lane, Outcome

# The function that serves the API (its create route) and the one that starts the workflow, by the short name
# their `<Name>FunctionName` stack output is built from (reliability/cdk/app_stack.py).
API_FUNCTION = "api"
WORKER_FUNCTION = "worker"

_HTTP = {
    "Executed": Outcome.EXECUTED,
    "Replayed": Outcome.REPLAYED,
    "PayloadMismatch": Outcome.MISMATCH,
    "InProgressConflict": Outcome.CONFLICT,
}
_QUEUE = {"DedupMiss": Outcome.STARTED, "DedupHit": Outcome.DEDUP_HIT, "PoisonMessage": Outcome.POISON}
_CONSUMER = {"DedupMiss": Outcome.APPLIED, "DedupHit": Outcome.DEDUPLICATED, "PoisonMessage": Outcome.POISON}
_EXECUTION_END = {
    "SUCCEEDED": Outcome.SUCCEEDED,
    "FAILED": Outcome.EXECUTION_FAILED,
    "ABORTED": Outcome.ABORTED,
    "TIMED_OUT": Outcome.TIMED_OUT,
}


def attempt_outcome(invocation: Invocation) -> tuple[Outcome, str]:  # noqa: PLR0911 - one rule per outcome
    """What one step invocation came to, from its fence decisions and how it ended."""
    decisions = set(invocation.decisions())
    if "FenceStale" in decisions:
        return Outcome.STALE, "its completion was refused: a newer attempt holds the fence"
    if "FenceFailed" in decisions:
        return Outcome.FAILED, invocation.error or "business error recorded on the fence"
    if invocation.error and invocation.error != "FenceBusy":
        how = "took the fence over, then " if "FenceTakeover" in decisions else ""
        return Outcome.DIED, f"{how}ended with {invocation.error}"
    if "FenceTakeover" in decisions:
        if any(line.get("reconciled") for line in invocation.lines):
            return (
                Outcome.TAKEOVER,
                "took over the fence; the external system already had the effect (reconciled)",
            )
        return Outcome.TAKEOVER, "took over the fence: the attempt before it held it until its lease ran out"
    if "FenceSkipped" in decisions:
        return Outcome.SKIPPED, "the fence answered with the stored result"
    if "FenceBusy" in decisions or invocation.error == "FenceBusy":
        return Outcome.BUSY, "another attempt holds a live lease"
    return Outcome.RAN, ""


def _http_detail(line: Mapping[str, Any]) -> str:
    status = line.get("status")
    return f"{status}" if status is not None else ""


def log_entries(invocations: Iterable[Invocation], step_of: Mapping[str, str]) -> list[Entry]:
    entries: list[Entry] = []
    for inv in invocations:
        if inv.function in step_of:
            outcome, detail = attempt_outcome(inv)
            entries.append(
                Entry(
                    inv.started,
                    Lane.STEP,
                    step_of[inv.function],
                    outcome,
                    detail,
                    inv.duration_ms,
                    inv.request_id,
                )
            )
            continue
        table, lane = (
            (_HTTP, Lane.HTTP)
            if inv.function == API_FUNCTION
            else (_QUEUE, Lane.QUEUE)
            if inv.function == WORKER_FUNCTION
            else (_CONSUMER, Lane.CONSUMER)
        )
        for line in inv.lines:
            decision = str(line.get("decision", ""))
            found = table.get(decision) or (Outcome.RETRY if decision == "Retry" else None)
            if found is None:
                continue
            if lane is Lane.HTTP:
                subject, detail = str(line.get("step") or "request"), _http_detail(line)
            else:
                subject, detail = inv.function, str(line.get("reason") or "")
            entries.append(
                Entry(_line_time(line, inv), lane, subject, found, detail, inv.duration_ms, inv.request_id)
            )
    return entries


def _line_time(line: Mapping[str, Any], inv: Invocation) -> float | None:
    return line_time(line) or inv.started


def epoch(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, int | float) else None


def failures(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """`<state>: <error>` for every failed task in an execution history."""
    current = "?"
    found = []
    for event in history:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            current = str(entered.get("name"))
        for key in (
            "lambdaFunctionFailedEventDetails",
            "taskFailedEventDetails",
            "lambdaFunctionTimedOutEventDetails",
        ):
            details = event.get(key)
            if details:
                found.append(f"{current}: {details.get('error', 'failed')}")
        stopped = event.get("executionAbortedEventDetails") or event.get("executionFailedEventDetails")
        if stopped and stopped.get("error"):
            found.append(f"stopped: {stopped['error']}")
    return found


EXECUTION_ENDED = "ExecutionEnded"  # reliability.telemetry.Decision.EXECUTION_ENDED (the worker's line)


def express_executions(invocations: Iterable[Invocation], entity_id: str, runs: int) -> list[dict[str, Any]]:
    """The entity's Express executions, shaped as DescribeExecution describes a Standard one (name,
    ARN, status, dates, input's token, failures), from the worker's `ExecutionEnded` lines. Each is
    named by its run's name and the start of its id, as several share the run's name."""
    names = {f"{entity_id}-r{run}" for run in range(1, runs + 1)}
    found = []
    for invocation in invocations:
        for line in invocation.lines:
            # arn:<partition>:states:<region>:<account>:express:<machine>:<name>:<id>
            arn = str(line.get("execution", ""))
            parts = arn.split(":")
            if line.get("decision") != EXECUTION_ENDED or len(parts) < 9 or parts[7] not in names:
                continue
            failure = ": ".join(
                str(part) for part in (line.get("error"), _message(line.get("cause"))) if part
            )
            found.append(
                {
                    "name": f"{parts[7]}:{parts[8][:8]}",
                    "executionArn": arn,
                    "status": line.get("status"),
                    "startDate": line.get("started"),
                    "stopDate": line.get("stopped"),
                    "input": json.dumps({"token": line.get("token")}),
                    "failures": [failure] if failure else [],
                }
            )
    return sorted(found, key=lambda e: epoch(e.get("startDate")) or 0)


def _message(cause: Any) -> Any:
    """A task failure's cause is Lambda's error document (`{"errorType", "errorMessage", ...}`):
    its message; any other cause as it is."""
    try:
        document = json.loads(cause) if isinstance(cause, str) else None
    except ValueError:
        return cause
    return document.get("errorMessage", cause) if isinstance(document, dict) else cause


def run_tokens(invocations: Iterable[Invocation], entity_id: str) -> set[str]:
    """The run tokens (`<stage>.<id>.r<n>`) the entity's step lines name."""
    suffix = re.compile(rf"\.{re.escape(entity_id)}\.r\d+$")
    return {
        str(line["token"])
        for invocation in invocations
        for line in invocation.lines
        if isinstance(line.get("token"), str) and suffix.search(line["token"])
    }


def execution_entries(executions: Iterable[Mapping[str, Any]]) -> list[Entry]:
    entries = []
    for e in executions:
        name = str(e["name"])
        redrive = "-restart-" in name
        entries.append(
            Entry(
                epoch(e.get("startDate")),
                Lane.EXECUTION,
                name,
                Outcome.REDRIVEN if redrive else Outcome.EXECUTION_STARTED,
                "same execution token" if redrive else "",
                execution=name,
            )
        )
        if e.get("redriveDate"):
            entries.append(
                Entry(
                    epoch(e["redriveDate"]),
                    Lane.EXECUTION,
                    name,
                    Outcome.REDRIVEN,
                    f"redrive #{e.get('redriveCount', 1)}",
                    execution=name,
                )
            )
        end = _EXECUTION_END.get(str(e.get("status")))
        if end is not None:
            entries.append(
                Entry(
                    epoch(e.get("stopDate")),
                    Lane.EXECUTION,
                    name,
                    end,
                    "; ".join(e.get("failures", [])),
                    execution=name,
                )
            )
    return entries


def compensations(
    steps: Mapping[str, Mapping[str, Any]], entries: Sequence[Entry], catch_targets: set[str]
) -> list[Entry]:
    """A step whose record says COMPENSATED gets a marker at the first attempt, after its own last
    one, of a step the workflow reaches through a Catch (the compensation that undid it)."""
    found = []
    for name, record in steps.items():
        if record.get("status") != "COMPENSATED":
            continue
        own = [e.at for e in entries if e.lane is Lane.STEP and e.subject == name and e.at]
        after = max(own) if own else 0.0
        undoing = [
            e
            for e in entries
            if e.lane is Lane.STEP
            and e.subject in catch_targets
            and e.at
            and e.at > after
            and e.outcome is Outcome.RAN
        ]
        first = min(undoing, key=lambda e: e.at or 0) if undoing else None
        found.append(
            Entry(
                first.at if first else (after or None),
                Lane.STEP,
                name,
                Outcome.COMPENSATED,
                f"undone by {first.subject}" if first else "undone by its compensation",
            )
        )
    return found


def assign_executions(entries: Sequence[Entry], executions: Sequence[Mapping[str, Any]]) -> None:
    """Attach each step attempt to the execution running at its time."""
    spans = [
        (epoch(e.get("startDate")) or 0, epoch(e.get("stopDate")) or float("inf"), str(e["name"]))
        for e in executions
    ]
    for entry in entries:
        if entry.lane is Lane.STEP and entry.at is not None and entry.execution is None:
            running = [name for start, stop, name in spans if start - 1 <= entry.at <= stop + 1]
            entry.execution = running[-1] if running else None
