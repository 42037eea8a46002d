"""An entity's story as data: the timeline entries, the step summary and the verdict.

One model, three renderings (terminal, `--json`, HTML). `Story.to_dict()`/`from_dict()` round-trip,
so a story recorded by the demo renders later without the cloud that produced it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Lane(StrEnum):
    HTTP = "http"
    QUEUE = "queue"
    EXECUTION = "execution"
    STEP = "step"
    CONSUMER = "consumer"


class Outcome(StrEnum):
    """What one request, delivery, execution or attempt came to."""

    EXECUTED = "executed"
    REPLAYED = "replayed"
    CONFLICT = "409 in progress"
    MISMATCH = "422 key reused"
    STARTED = "started execution"
    DEDUP_HIT = "dedup hit"
    POISON = "dead-lettered"
    RAN = "ran"
    SKIPPED = "skipped by fence"
    TAKEOVER = "takeover"
    STALE = "stale"
    BUSY = "busy"
    FAILED = "failed"
    DIED = "died"
    COMPENSATED = "compensated"
    APPLIED = "applied"
    DEDUPLICATED = "deduplicated"
    RETRY = "retry"
    EXECUTION_STARTED = "execution started"
    REDRIVEN = "redrive started"
    SUCCEEDED = "SUCCEEDED"
    EXECUTION_FAILED = "FAILED"
    ABORTED = "ABORTED"
    TIMED_OUT = "TIMED_OUT"
    RUNNING = "RUNNING"


# How a step looks in the picture, from all its attempts; the first that applies wins.
class StepState(StrEnum):
    NOT_RUN = "not run"
    COMPENSATED = "compensated"
    FAILED = "failed"
    RETRIED = "retried"
    SKIPPED = "skipped"
    RAN = "ran"


_RETRIED = frozenset({Outcome.DIED, Outcome.TAKEOVER, Outcome.STALE, Outcome.BUSY, Outcome.RETRY})


@dataclass
class Entry:
    """One line of the timeline. `at` is epoch seconds (None: the source gave no time)."""

    at: float | None
    lane: Lane
    subject: str
    outcome: Outcome
    detail: str = ""
    duration_ms: float | None = None
    attempt: str | None = None
    execution: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entry:
        return cls(**{**data, "lane": Lane(data["lane"]), "outcome": Outcome(data["outcome"])})


@dataclass
class Story:
    entity_id: str
    status: str
    run: int | None
    client_key: str | None
    total: str
    entries: list[Entry]
    steps: list[str]  # the workflow's task states, in definition order
    edges: list[tuple[str, str, str]]  # (from, to, "next" | "catch <errors>")
    start_at: str | None
    verdict: str
    violations: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # effects, providers, fences ...

    def attempts(self, step: str) -> list[Entry]:
        return [e for e in self.entries if e.lane is Lane.STEP and e.subject == step]

    def step_state(self, step: str) -> StepState:
        outcomes = {e.outcome for e in self.attempts(step)}
        if not outcomes:
            return StepState.NOT_RUN
        if Outcome.COMPENSATED in outcomes:
            return StepState.COMPENSATED
        if Outcome.FAILED in outcomes:
            return StepState.FAILED
        if outcomes & _RETRIED:
            return StepState.RETRIED
        if Outcome.SKIPPED in outcomes:
            return StepState.SKIPPED
        return StepState.RAN

    def invocations(self, step: str) -> int:
        """Attempts that were Lambda invocations (a compensation marker is not one)."""
        return sum(1 for e in self.attempts(step) if e.attempt)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entries"] = [e.to_dict() for e in self.entries]
        data["step_states"] = {s: self.step_state(s).value for s in self.steps}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Story:
        fields = {k: v for k, v in data.items() if k != "step_states"}
        fields["entries"] = [Entry.from_dict(e) for e in data["entries"]]
        fields["edges"] = [tuple(edge) for edge in data["edges"]]
        return cls(**fields)
