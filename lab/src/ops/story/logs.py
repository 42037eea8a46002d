"""The function logs an entity's story is read from: one `Invocation` per Lambda request id.

Two sources give the same shape:
- `LocalLogFiles`: the local cloud's `.localcloud/logs/<function>.log` (START/END/REPORT lines and
  the Powertools JSON lines; its REPORT line adds `Status: <errorType>` for a failed invocation);
- `InsightsLogs`: CloudWatch Logs Insights on a deployed stage's `/aws/lambda/<function>` groups.
Only lines that name the entity (its id, execution token or stored idempotency key) are kept, plus
the REPORT line of each request that had one (duration, error).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

_REPORT = re.compile(
    r"^REPORT RequestId: (?P<id>\S+)\s+Duration: (?P<ms>[0-9.]+) ms(?:.*?Status: (?P<status>\S+))?"
)
_POWERTOOLS_TIME = "%Y-%m-%d %H:%M:%S,%f%z"


@dataclass
class Invocation:
    """One Lambda request: when it logged first, how long it ran, how it ended, what it decided."""

    function: str
    request_id: str
    started: float | None = None
    duration_ms: float | None = None
    error: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)

    def decisions(self) -> list[str]:
        return [str(line["decision"]) for line in self.lines if line.get("decision")]

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "request_id": self.request_id,
            "started": self.started,
            "duration_ms": self.duration_ms,
            "error": self.error,
            "lines": self.lines,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Invocation:
        return cls(
            **{k: data[k] for k in ("function", "request_id", "started", "duration_ms", "error")},
            lines=list(data.get("lines", [])),
        )


def line_time(line: Mapping[str, Any]) -> float | None:
    """Epoch seconds of a Powertools JSON line (its `timestamp`), None when it has none."""
    stamp = line.get("timestamp")
    if isinstance(stamp, int | float):
        return float(stamp) / (1000 if stamp > 1e11 else 1)
    if isinstance(stamp, str):
        try:
            return datetime.strptime(stamp, _POWERTOOLS_TIME).timestamp()
        except ValueError:
            return None
    return None


def mentions(line: Mapping[str, Any], needles: Sequence[str]) -> bool:
    """Whether any field of the line contains one of the needles (entity id, token, stored key)."""
    values = [str(value) for value in line.values() if value is not None]
    return any(needle and needle in value for needle in needles for value in values)


class LogSource(Protocol):
    def invocations(self, functions: Mapping[str, str], needles: Sequence[str]) -> list[Invocation]:
        """`functions`: short name -> physical name; the invocations whose lines name a needle."""
        ...


def _assemble(
    short: str,
    json_lines: Iterable[dict[str, Any]],
    reports: Mapping[str, tuple[float, str | None]],
    needles: Sequence[str],
) -> list[Invocation]:
    by_request: dict[str, Invocation] = {}
    for line in json_lines:
        request_id = line.get("function_request_id")
        if not request_id or not mentions(line, needles):
            continue
        invocation = by_request.setdefault(str(request_id), Invocation(short, str(request_id)))
        at = line_time(line)
        if at is not None and (invocation.started is None or at < invocation.started):
            invocation.started = at
        invocation.lines.append(line)
    for request_id, invocation in by_request.items():
        if request_id in reports:
            invocation.duration_ms, invocation.error = reports[request_id]
    return list(by_request.values())


@dataclass(frozen=True)
class LocalLogFiles:
    """The local cloud's per-function log files (`<dir>/<physical function name>.log`)."""

    directory: Path

    def invocations(self, functions: Mapping[str, str], needles: Sequence[str]) -> list[Invocation]:
        found: list[Invocation] = []
        for short, physical in functions.items():
            path = self.directory / f"{physical}.log"
            if not path.exists():
                continue
            json_lines: list[dict[str, Any]] = []
            reports: dict[str, tuple[float, str | None]] = {}
            for raw in path.read_text(errors="replace").splitlines():
                if raw.startswith("{"):
                    try:
                        data = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(data, dict) and "_aws" not in data:
                        json_lines.append(data)
                elif match := _REPORT.match(raw):
                    reports[match["id"]] = (float(match["ms"]), match["status"])
            found.extend(_assemble(short, json_lines, reports, needles))
        return found


@dataclass(frozen=True)
class InsightsLogs:
    """CloudWatch Logs Insights over `/aws/lambda/<function>` of a deployed stage."""

    client: Any
    window_seconds: int = 14 * 24 * 3600
    poll_seconds: float = 1.0
    timeout_seconds: float = 120.0

    def _query(self, groups: list[str], query: str) -> list[dict[str, str]]:
        now = int(time.time())
        query_id = self.client.start_query(
            logGroupNames=groups,
            startTime=now - self.window_seconds,
            endTime=now + 60,
            queryString=query,
            limit=10000,
        )["queryId"]
        deadline = time.monotonic() + self.timeout_seconds
        while True:
            result = self.client.get_query_results(queryId=query_id)
            if result["status"] in ("Complete", "Failed", "Cancelled", "Timeout"):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"Logs Insights query {query_id} did not finish")
            time.sleep(self.poll_seconds)
        return [{cell["field"]: cell["value"] for cell in row} for row in result.get("results", [])]

    def invocations(self, functions: Mapping[str, str], needles: Sequence[str]) -> list[Invocation]:
        found: list[Invocation] = []
        wanted = " or ".join(f"@message like {json.dumps(n)}" for n in needles if n)
        for short, physical in functions.items():
            groups = [f"/aws/lambda/{physical}"]
            rows = self._query(groups, f"fields @message | filter {wanted} | sort @timestamp asc")
            json_lines = []
            for row in rows:
                try:
                    data = json.loads(row.get("@message", ""))
                except ValueError:
                    continue
                if isinstance(data, dict) and "_aws" not in data:
                    json_lines.append(data)
            ids = sorted(
                {str(line["function_request_id"]) for line in json_lines if "function_request_id" in line}
            )
            reports: dict[str, tuple[float, str | None]] = {}
            if ids:
                report_rows = self._query(
                    groups,
                    'fields @requestId, @duration | filter @type = "REPORT" and @requestId in '
                    + json.dumps(ids),
                )
                reports = {r["@requestId"]: (float(r["@duration"]), None) for r in report_rows}
            found.extend(_assemble(short, json_lines, reports, needles))
        return found
