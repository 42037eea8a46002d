"""The report of one chaos run: JSON for machines, Markdown for docs/guarantees.md, which includes it."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.interleave import PairResult
from chaos.points import PointHit
from chaos.recovery import Recovery
from chaos.scenarios import ENTITY, KINDS
from chaos.single import ScheduleResult

MAX_LISTED = 40
# How a violation message names what went wrong (ops.invariants.rules wording): an effect of a
# declared step or consumer applied twice, an effect of a failed run left standing, a run never
# finished; a service's own rule (its proof hook) is "other".
_DOUBLE = re.compile(r"\d+ (\S+) effects \(at most 1\)")
_KINDS = (
    ("not compensated", re.compile(r"not undone by|which no step compensates|still standing")),
    ("not finished", re.compile(r"neither completed|ended RUNNING|ended ACCEPTED|never got a 202")),
    ("HTTP replay differs", re.compile(r"differs from the first")),
)


def classify(violation: str) -> str:
    if double := _DOUBLE.search(violation):
        return f"double {double[1]}"
    return next((name for name, pattern in _KINDS if pattern.search(violation)), "other")


@dataclass
class Section:
    """A family of schedules and what they found."""

    schedules: int = 0
    faults: int = 0
    violating: int = 0
    violations: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    recovery: Recovery = field(default_factory=Recovery)
    simulated_seconds: float = 0.0
    seconds: float = 0.0  # wall time of the worker processes that ran them, summed
    drawn: Counter[str] = field(default_factory=Counter)  # schedules that drew each kind of fault
    # Schedules in which copies of one run ran at once / an execution was killed at its time limit.
    concurrent_copies: int = 0
    time_limit_kills: int = 0

    def add(self, result: ScheduleResult) -> None:
        """Faults injected: crashes that fired, each duplicate delivery, and every other fault the
        schedule played (client retries, lease expiries, redrives, restarts)."""
        self.schedules += 1
        self.simulated_seconds += result.simulated_seconds
        self.drawn.update(set(result.drawn))
        other = [f for f in result.faults if not f.startswith("crash ") and "duplicate deliveries" not in f]
        self.faults += len(result.fired) + result.recovery.duplicate_deliveries + len(other)
        self.recovery.add(result.recovery)
        self.concurrent_copies += result.recovery.concurrent_copies > 0
        self.time_limit_kills += result.recovery.time_limit_kills > 0
        if result.violations:
            self.violating += 1
            self.violations.extend(f"{result.name}: {v}" for v in result.violations)
            self.kinds.update({classify(v) for v in result.violations})

    def add_pair(self, pair: PairResult) -> None:
        """Each interleaving is a schedule; its fault is the concurrent second attempt."""
        self.schedules += pair.interleavings
        self.faults += pair.interleavings
        by_interleaving: dict[str, set[str]] = {}
        for violation in pair.violations:
            by_interleaving.setdefault(violation.split(":", 1)[0], set()).add(classify(violation))
        self.violating += len(by_interleaving)
        self.violations.extend(f"{pair.name}: {v}" for v in pair.violations)
        for kinds in by_interleaving.values():
            self.kinds.update(kinds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "schedules": self.schedules,
            "faults_injected": self.faults,
            "violating_schedules": self.violating,
            "violations": len(self.violations),
            "violation_kinds": dict(self.kinds),
            "simulated_days": round(self.simulated_seconds / 86_400, 1),
            "seconds": round(self.seconds, 1),
            "schedules_per_minute": round(60 * self.schedules / self.seconds, 1) if self.seconds else None,
            "recovery": vars(self.recovery),
            "drawn": dict(sorted(self.drawn.items())),
            "schedules_with_concurrent_copies": self.concurrent_copies,
            "schedules_with_time_limit_kills": self.time_limit_kills,
            "examples": self.violations[:MAX_LISTED],
        }


@dataclass
class Report:
    command: str
    seed: int
    catalogue: dict[str, list[PointHit]]
    single: Section = field(default_factory=Section)
    random: Section = field(default_factory=Section)
    concurrency: Section = field(default_factory=Section)
    zombies: Section = field(default_factory=Section)
    pairs: list[PairResult] = field(default_factory=list)
    control: Section = field(default_factory=Section)
    exercised: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)  # AWS calls answered with an injected error
    lost: set[str] = field(default_factory=set)  # AWS calls whose answer was lost at least once
    operator_calls: list[PointHit] = field(default_factory=list)  # the operator tools' calls
    wall_seconds: float = 0.0

    def add_pair(self, pair: PairResult, *, zombie: bool) -> None:
        self.pairs.append(pair)
        (self.zombies if zombie else self.concurrency).add_pair(pair)

    def crash_points(self) -> dict[str, Any]:
        points: dict[str, set[str]] = {}
        for hits in self.catalogue.values():
            for hit in hits:
                points.setdefault(hit.function, set()).add(hit.label)
        per_function = {
            function: {
                "points": len(labels),
                "exercised": len(labels & self.exercised),
                "calls": len(_calls(labels)),
                "errored": len(_calls(labels) & self.errored),
            }
            for function, labels in sorted(points.items())
        }
        every = set().union(*points.values()) if points else set()
        answers = _answers(every) | {hit.label for hit in self.operator_calls}
        return {
            "functions": len(points),
            "points": len(every),
            "exercised": len(every & self.exercised),
            "missing": sorted(every - self.exercised)[:MAX_LISTED],
            "calls": len(_calls(every)),
            "errored": len(_calls(every) & self.errored),
            "calls_never_errored": sorted(_calls(every) - self.errored)[:MAX_LISTED],
            "answers": len(answers),  # each call's answer (its `after:` point), the tools' included
            "answers_lost": len(answers & self.lost),
            "answers_never_lost": sorted(answers - self.lost)[:MAX_LISTED],
            "per_function": per_function,
        }

    @property
    def violations(self) -> int:
        return sum(len(s.violations) for s in (self.single, self.random, self.concurrency, self.zombies))

    @property
    def ok(self) -> bool:
        points = self.crash_points()
        return (
            self.violations == 0
            and len(self.control.violations) > 0
            and points["exercised"] == points["points"]
            and points["answers_lost"] == points["answers"]
        )

    def schedules_per_minute(self) -> float:
        """Every schedule run (each category, interleavings and the control) per minute of wall time."""
        sections = (self.single, self.random, self.concurrency, self.zombies, self.control)
        minutes = self.wall_seconds / 60
        return round(sum(s.schedules for s in sections) / minutes, 1) if minutes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "seed": self.seed,
            "wall_seconds": round(self.wall_seconds, 1),
            "schedules_per_minute": self.schedules_per_minute(),
            "ok": self.ok,
            "invariant_violations": self.violations,
            "control_violations": len(self.control.violations),
            "crash_points": self.crash_points(),
            "categories": {
                "single_faults": self.single.as_dict(),
                "random_schedules": self.random.as_dict(),
                "concurrency": self.concurrency.as_dict(),
                "zombies": self.zombies.as_dict(),
            },
            "interleavings": {
                "total": sum(p.interleavings for p in self.pairs),
                "pairs": [
                    {
                        "pair": p.name,
                        "interleavings": p.interleavings,
                        "storage_calls_per_attempt": list(p.max_calls),
                        "outcomes": dict(p.outcomes),
                        "violations": len(p.violations),
                    }
                    for p in self.pairs
                ],
            },
            "control": self.control.as_dict(),
        }

    def write(self, directory: Path) -> tuple[Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        data = self.as_dict()
        json_path = directory / "report.json"
        json_path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
        md_path = directory / "report.md"
        md_path.write_text(markdown(data))
        return json_path, md_path


def _rows(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    return lines


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _category_row(name: str, c: dict[str, Any]) -> tuple[Any, ...]:
    return (
        name,
        c["schedules"],
        c["faults_injected"],
        c.get("simulated_days", 0),
        c["violating_schedules"],
        c["violations"],
        c.get("schedules_per_minute") or "-",
    )


def markdown(data: dict[str, Any]) -> str:
    points = data["crash_points"]
    lines = [
        "# Chaos report",
        "",
        f"`{data['command']}` (seed {data['seed']}, {data['wall_seconds']} s wall, "
        f"{data['schedules_per_minute']} schedules per minute): "
        f"**{data['invariant_violations']} invariant violations** in the real run, "
        f"**{data['control_violations']} in the control** (fences, HTTP idempotency and dedup off). "
        f"Verdict: {'PASS' if data['ok'] else 'FAIL'}.",
        "",
        "## Schedules",
        "",
        "- **single faults**: one crash at each crash point of each function (before and after every AWS "
        "call, and between each external effect and its record), one error response at each AWS call "
        "(its service's transient codes in turn) and one lost answer at each AWS call (the call lands, "
        "its answer is lost, the SDK sends it again with the function's own client configuration), for "
        f"each outcome of the workflow ({', '.join(KINDS)}), then the platform's recovery (client retry "
        "with the same key, SQS redelivery after the visibility timeout, the state machine's Retry) and "
        "an operator redrive where the execution gave up; and a lost answer at each call the operator "
        f"tools make (`ops.rerun`, `ops.redrive`) while they rerun {_a(ENTITY)}, redrive an execution and a "
        "DLQ;",
        f"- **random schedules** (`chaos.draw`): mixes of 1-3 {ENTITY}s, up to 3 crashes, up to 3 injected "
        "error responses (each service's transient codes, before or after the call), up to 3 lost "
        "answers (the functions' calls and the operator tools'), a Sandbox.Timedout, an operator's "
        "StopExecution while an invocation runs, up to 5 deliveries of one message, clients that retry, "
        "reuse their key with another body or give up after one attempt, lease expiries, time jumps "
        "across the app's windows (the platform first comes to rest by itself, sweeper included; then "
        "DynamoDB TTL deletion, provider keys aging), the service's world changes (its proof's "
        f"CHANGES), a message for {_a(ENTITY)}'s next run nobody decided on, `make rerun` of {_a(ENTITY)}, "
        "redrives, restarts with the same token and DLQ redrives, throttled event-source polls; "
        "another caller (a second IAM principal) "
        f"sending the first client's keys and reading its {ENTITY}s, a client's retry after a world change "
        "and the HTTP key's expiry, events from other producers or with malformed fields on the consumer "
        "queues, a late copy of an earlier run's message after `make rerun`. Each schedule draws from a "
        "random half "
        "of these kinds (swarm testing); a third are an effect left at its boundary by an operator's "
        "stop, then a window crossed; each is the one of three drawn that fires the most (fault kind, "
        "point) pairs not fired yet (seed below; chunk i of the run uses seed + i); and, from a stream "
        "of their own (`chaos.concurrent`), copies of one run at once with their steps interleaved "
        "in an order the seed draws (a restart while the first copy runs; on Express also one message "
        "handled by two workers at once) and, on Express, an execution killed at its time limit "
        "mid-step;",
        "- **concurrency**: two attempts of the same request, message or step, interleaved at every storage "
        "call, all interleavings (depth-first, each from the just-deployed world);",
        "- **zombies**: the same, with the second attempt one lease later: the first resumes after its "
        "lease passed to the second and tries to complete.",
        "",
        "Deterministic: the same seed plays the same schedules to the same verdict (Step Functions "
        "executions run one at a time, in start order, where the platform or a test waits for them, "
        "and copies of one run at once in the order their seed draws: `simulator.executions`, "
        "`simulator.concurrent`); a violating schedule is listed below whole, with its chunk's "
        "seed, and the mutant search shrinks its reproducers (`chaos.shrink`). Not drawn: more "
        "than two concurrent attempts of one step, throttled StartExecution storms (`make scale`).",
        "",
        "After every schedule: `ops.invariants` over the stores (effects once, amounts agree, steps agree "
        "with effects and fences, a dead letter only with its effects undone), the fence audit, every "
        "HTTP answer in the OpenAPI contract and every repeated one equal to the first, a retry with the "
        f"same key and body of an existing {ENTITY} answered that {ENTITY} (never a 4xx), nobody answered "
        f"with another caller's {ENTITY} or told its key is in use, every foreign event a consumer "
        "cannot verify dead-lettered with a reason, no late copy of an earlier run dead-lettered, every "
        f"request answered, one execution per ({ENTITY}, run) (Standard), no execution failed on an "
        f"error its workflow does not declare, each {ENTITY}'s final status the one its kind must reach.",
        "",
    ]
    categories = data["categories"]
    lines += _rows(
        (
            "category",
            "schedules",
            "faults injected",
            "simulated days",
            "violating schedules",
            "violations",
            "schedules per minute (one process)",
        ),
        [_category_row(name.replace("_", " "), c) for name, c in categories.items()]
        + [_category_row("**control** (guards off)", data["control"])],
    )
    lines += [
        "",
        f"Crash points: {points['exercised']} of {points['points']} exercised (a crash injected there at "
        f"least once) across {points['functions']} functions. Error responses: {points['errored']} of "
        f"{points['calls']} AWS calls (the crash points before or after a call) answered at least once "
        "with an injected error (single faults and random schedules)"
        + (f"; never: {', '.join(points['calls_never_errored'])}" if points["calls_never_errored"] else "")
        + f". Lost answers: {points['answers_lost']} of {points['answers']} calls (the operator tools' "
        "included) had their answer lost at least once"
        + (f"; never: {', '.join(points['answers_never_lost'])}" if points["answers_never_lost"] else "")
        + ".",
        "",
        "Copies of one run at once (two executions or workers of the same run, their steps interleaved "
        "in the order the schedule's seed draws) in "
        + _per_family({**categories, "control": data["control"]}, "schedules_with_concurrent_copies")
        + "; an execution killed at its time limit mid-step (Express; the invocation runs on) in "
        + _per_family({**categories, "control": data["control"]}, "schedules_with_time_limit_kills")
        + ".",
        "",
    ]
    lines += _rows(
        ("function", "crash points", "exercised", "AWS calls", "error injected"),
        [
            (f, *(p[k] for k in ("points", "exercised", "calls", "errored")))
            for f, p in points["per_function"].items()
        ],
    )
    lines += ["", f"## Interleavings ({data['interleavings']['total']} in all)", ""]
    lines += _rows(
        ("pair", "interleavings", "storage calls per attempt", "outcomes", "violations"),
        [
            (
                p["pair"],
                p["interleavings"],
                "/".join(str(n) for n in p["storage_calls_per_attempt"]),
                ", ".join(f"{k}: {v}" for k, v in sorted(p["outcomes"].items())),
                p["violations"],
            )
            for p in data["interleavings"]["pairs"]
        ],
    )
    lines += ["", "## Faults drawn: schedules that drew each kind", ""]
    sections = {**{name.replace("_", " "): c for name, c in categories.items()}, "control": data["control"]}
    kinds = sorted({kind for c in sections.values() for kind in c.get("drawn", {})})
    lines += _rows(
        ("kind of fault", *sections),
        [(kind, *(c.get("drawn", {}).get(kind, 0) for c in sections.values())) for kind in kinds],
    )
    recovery: Counter[str] = Counter()
    for c in categories.values():
        recovery.update(c["recovery"])
    lines += ["", "## Recovery used (real run)", ""]
    lines += _rows(("mechanism", "count"), sorted(recovery.items()))
    control = data["control"]
    lines += ["", "## Control: what the guards prevent", ""]
    lines += _rows(("violation found", "schedules"), sorted(control["violation_kinds"].items()))
    if control["examples"]:
        lines += ["", "Examples:", ""]
        lines += [f"- {_short(v)}" for v in control["examples"][:8]]
    real = [v for c in categories.values() for v in c["examples"]]
    if real:
        lines += ["", "## Violations in the real run", ""]
        lines += [f"- {_short(v)}" for v in real[:MAX_LISTED]]
    return "\n".join(lines) + "\n"


def _per_family(categories: dict[str, Any], key: str) -> str:
    """`3 random schedules, 1 control` from each category's count of `key`."""
    counted = [(name.replace("_", " "), c.get(key, 0)) for name, c in categories.items()]
    return ", ".join(f"{count} {name}" for name, count in counted if count) or "no schedules"


def _calls(labels: set[str]) -> set[str]:
    """The crash points at an AWS call, where an error response can be injected."""
    return {label for label in labels if PointHit.parse(label).at_call}


def _answers(labels: set[str]) -> set[str]:
    """The points where a call's answer comes back (or is lost)."""
    return {label for label in labels if PointHit.parse(label).point.startswith("after:")}


def _a(noun: str) -> str:
    """`noun` with its indefinite article (the entity's name in the report's prose)."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
