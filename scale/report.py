"""The figures of a `make scale` run as a table (terminal and scale/results/report.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MUTANT = "mutant"

ROWS = (
    ("orders", lambda r: f"{r['orders']:,}"),
    ("completed", lambda r: f"{r['completed']:,}"),
    ("failed, compensated", lambda r: f"{r['failed_compensated']:,}"),
    ("poison (dead-lettered with a reason)", lambda r: f"{r['poison_orders']:,}"),
    ("not terminal", lambda r: f"{r['not_terminal']:,}"),
    ("time to drain", lambda r: f"{r['time_to_drain_s']:,.0f} s"),
    ("max queue age", lambda r: ", ".join(f"{q} {s:,.0f} s" for q, s in r["max_queue_age_s"].items())),
    ("throttles", lambda r: ", ".join(f"{k} {v:,}" for k, v in r["throttles"].items()) or "0"),
    ("retries", lambda r: ", ".join(f"{k} {v:,}" for k, v in r["retries"].items()) or "0"),
    ("legitimate messages in a DLQ", lambda r: f"{sum(r['dlq_legit'].values()):,}"),
    ("executions failed (waiting for a redrive)", lambda r: f"{r['failed_executions']:,}"),
    ("invariant violations", lambda r: f"{r['violations']:,}"),
    ("model events / wall time", lambda r: f"{r['events']:,} / {r['wall_seconds']} s"),
)


def table(runs: Mapping[str, Mapping[str, Any]]) -> str:
    names = list(runs)
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(runs[n]) for n in names) + " |")
    return "\n".join(lines)


def render(runs: Mapping[str, Mapping[str, Any]]) -> str:
    stage = next(iter(runs.values()))["stage"]
    what = "\n".join(f"- **{name}**: {run['what']} (seed {run['seed']})" for name, run in runs.items())
    examples = "\n".join(
        f"- {name}: " + "; ".join(run["violation_examples"])
        for name, run in runs.items()
        if run["violations"]
    )
    return (
        f"# make scale: stage `{stage}` in the scale model (virtual time)\n\n"
        "Written by `make scale` (`python -m scale run`); see scale/README.md for what the model "
        "covers and what it does not.\n\n"
        f"{what}\n\n{table(runs)}\n\n" + (f"Violations seen:\n{examples}\n" if examples else "")
    )


def failed(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What makes `make scale` fail: a planned run that loses anything, a mutant that does not."""
    problems = []
    for name, run in runs.items():
        lost = run["violations"] or run["not_terminal"] or sum(run["dlq_legit"].values())
        if MUTANT in name and not lost:
            problems.append(f"{name}: the mutant lost nothing, so the capacity plan is not shown to matter")
        elif MUTANT not in name and lost:
            problems.append(f"{name}: {run['violations']} violations, {run['not_terminal']} not terminal")
    return problems
