"""schemathesis against the service's API: its one command, and the figures of a run.

    figures = run(api_url, report_dir, max_examples=100, seed=11)

Runs the pinned schemathesis (`st run`) in a subprocess from the project directory, so its
configuration, `schemathesis.toml` (what is let through, and the rule that makes each right), and
its hooks (`ops.fuzz.schemathesis_rules`) apply; every phase (examples, coverage, fuzzing,
stateful) against the service's published document (`ops.service.openapi_path`). The figures are read
from its reports: requests and statuses (HAR), test cases and failures (JSON), which checks failed
on how many test cases (NDJSON). `make fuzz` runs it after the hostile requests; tests/fuzz runs a
short one in `make test`, expecting no failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from emulator import project
from ops.service import openapi_path

PROJECT = project.root()
DOCUMENT = openapi_path()
CONFIG = PROJECT / "schemathesis.toml"
PHASES = ("examples", "coverage", "fuzzing", "stateful")
REPORTS = ("json", "har", "ndjson")


def command(api_url: str, report_dir: Path, *, max_examples: int, seed: int) -> list[str]:
    """The `st run` command line (everything else is in schemathesis.toml)."""
    if report_dir.is_relative_to(PROJECT):
        report_dir = report_dir.relative_to(PROJECT)
    return [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(CONFIG),
        "run",
        str(DOCUMENT.relative_to(PROJECT)),
        "--url",
        api_url.rstrip("/"),
        "--phases",
        ",".join(PHASES),
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--report",
        ",".join(REPORTS),
        "--report-dir",
        str(report_dir),
        "--no-color",
    ]


def _report(report_dir: Path, kind: str) -> Path:
    (path,) = report_dir.glob(f"{kind}-*")
    return path


def _figures(report_dir: Path) -> dict[str, Any]:
    summary = json.loads(_report(report_dir, "json").read_text())
    entries = json.loads(_report(report_dir, "har").read_text())["log"]["entries"]
    statuses = Counter(entry["response"]["status"] for entry in entries)
    failed: dict[str, set[str]] = {}
    for line in _report(report_dir, "ndjson").read_text().splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if not finished:
            continue
        for case_id, results in (finished.get("recorder", {}).get("checks") or {}).items():
            for result in results:
                if result["status"] == "failure":
                    failed.setdefault(result["name"], set()).add(case_id)
    return {
        "requests": len(entries),
        "statuses": {str(status): count for status, count in sorted(statuses.items())},
        "test_cases": summary["test_cases"]["generated"],
        "phases": {name: phase["status"] for name, phase in summary["phases"].items()},
        "failures": sum(failure["count"] for failure in summary["failures"]),
        "failures_by_kind": {
            f"{failure['code']} {failure['title']}": failure["count"] for failure in summary["failures"]
        },
        "failing_test_cases_by_check": {name: len(cases) for name, cases in sorted(failed.items())},
        "errors": len(summary["errors"]),
        "warnings": {name: items for name, items in summary["warnings"].items() if items},
        "exit_code": summary["exit_code"],
    }


def run(
    api_url: str, report_dir: Path, *, max_examples: int, seed: int, timeout: float = 1800
) -> dict[str, Any]:
    """Run schemathesis against the API at `api_url` (its stage's base URL) and return its figures,
    with its console output under `output` (the failures, how to reproduce each)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    for stale in report_dir.glob("*"):
        if stale.is_file():
            stale.unlink()
    args = command(api_url, report_dir, max_examples=max_examples, seed=seed)
    path = os.pathsep.join(
        filter(None, [str(PROJECT / "functions"), str(PROJECT), os.environ.get("PYTHONPATH")])
    )
    started = time.monotonic()
    finished = subprocess.run(  # noqa: S603 - the pinned schemathesis, arguments built above
        args,
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    figures: dict[str, Any] = {
        "command": " ".join(["st", *args[args.index("run") :]]),
        "seconds": round(time.monotonic() - started, 1),
    }
    try:
        figures |= _figures(report_dir)
    except (OSError, ValueError, KeyError) as error:  # no reports: schemathesis could not run
        figures |= {"failures": None, "exit_code": finished.returncode, "error": repr(error)}
    figures["ok"] = finished.returncode == 0 and figures.get("failures") == 0 and not figures.get("errors")
    figures["output"] = finished.stdout + finished.stderr
    return figures
