"""Structured decisions: a log line where an operator reads one (Powertools Logger), a count in
ONE EMF document per invocation (Powertools EphemeralMetrics) and X-Ray annotations (Powertools
Tracer).

Every decision the layer takes (dedup hit, replay, fence claim, ...) goes through
``Telemetry.decision`` so every signal carries the same keys (``KEY_FIELDS``): the entity's id,
idempotency key hash, execution token, step, attempt and run. They come from the call, else from
what the caller bound for the invocation (``Telemetry.bind``), else from the key and token
themselves (``reliability.keys.key_parts``: a token or event id names its business id and run).
A log line also keeps the full stored ``key`` unless its own step and token spell it (a fence's
or a consumer's dedup record: ``<namespace>#<stage>#r<run>#v:{"step", "token"}``); a trace is
found by ``key_hash`` (annotations are indexed, so they carry the hash, never a raw key).

What it costs (logs are billed by the byte ingested; bench/cost.py measures bytes per order):

- A decision line's message is the decision's name; it leaves out what Powertools appends that
  says nothing about the decision (``_UNREPEATED``) and a correlation id that is its own token.

- Metrics: inside a handler wrapped by ``metrics_per_invocation`` the decisions are counted and
  written at the end as one EMF document per step dimension (one per invocation: a function serves
  one step), each decision a metric named after it, dimensions ``service`` and ``step``. Outside a
  wrapped handler (scripts, tests) each decision is its own document at once, so none is lost.
- Log lines: every decision that is not routine is a line (replays, refusals, failures, takeovers,
  releases, retries, poison, dedup and request outcomes). The routine fence decisions
  (``FenceClaimed``, ``FenceCompleted``) are a line only when they are the first line of their
  attempt (step + token) in the invocation: the claim of a leased step is its line (and the only
  trace of an attempt that dies holding the lease), its completion is counted only; an atomic
  step's completion is its line. Inside ``Telemetry.summarised`` (consumer dedup, whose hit/miss
  is the line) they are counted only.

Each ``Decision`` says whether it is fresh work or a replay of stored work (``Decision.kind``): the
split the dashboard shows. Retries, busy fences and conflicts are expected under AWS retries, so
they are logged at INFO, never as errors.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from reliability.keys import canonical_json, key_parts

# The keys in every signal, in this order in log lines and as X-Ray annotation names. `entity_id`
# is the business id of whatever the service's `Entity` is (an order, a wallet, a visit): one name,
# so one Logs Insights query or X-Ray filter reads every service built on the library.
ENTITY_KEY = "entity_id"
KEY_FIELDS = (ENTITY_KEY, "key_hash", "token", "step", "attempt", "run")
KEY_HASH_HEX = 32


class Kind(Enum):
    FRESH = "fresh"  # the work ran now
    REPLAYED = "replayed"  # a stored answer was given instead of running again
    REFUSED = "refused"  # the request/attempt was turned away (conflict, busy, stale, rejected)
    FAILED = "failed"  # a business failure recorded, or a message dead-lettered
    OTHER = "other"  # bookkeeping: a lease released, a retry


class Decision(Enum):
    """Outcomes; the value is the metric name."""

    DEDUP_HIT = "DedupHit"
    DEDUP_MISS = "DedupMiss"
    REPLAYED = "Replayed"
    EXECUTED = "Executed"
    IN_PROGRESS_CONFLICT = "InProgressConflict"
    PAYLOAD_MISMATCH = "PayloadMismatch"
    KEY_REJECTED = "IdempotencyKeyRejected"
    FENCE_CLAIMED = "FenceClaimed"
    FENCE_TAKEOVER = "FenceTakeover"
    FENCE_SKIPPED = "FenceSkipped"
    FENCE_BUSY = "FenceBusy"
    FENCE_STALE = "FenceStale"
    FENCE_COMPLETED = "FenceCompleted"
    FENCE_FAILED = "FenceFailed"
    FENCE_RELEASED = "FenceReleased"
    POISON = "PoisonMessage"
    RETRY = "Retry"
    STRANDED_RUN = "StrandedRun"  # the message of an entity's run stranded in ACCEPTED, re-sent by the sweep
    # A workflow execution the caller waited for (Express) ended: its ARN, status, dates, error.
    # Express keeps no execution history, so this line is what tells an entity's executions.
    EXECUTION_ENDED = "ExecutionEnded"

    @property
    def kind(self) -> Kind:
        return _KINDS[self]


_KINDS: dict[Decision, Kind] = {
    Decision.DEDUP_HIT: Kind.REPLAYED,
    Decision.DEDUP_MISS: Kind.FRESH,
    Decision.REPLAYED: Kind.REPLAYED,
    Decision.EXECUTED: Kind.FRESH,
    Decision.IN_PROGRESS_CONFLICT: Kind.REFUSED,
    Decision.PAYLOAD_MISMATCH: Kind.REFUSED,
    Decision.KEY_REJECTED: Kind.REFUSED,
    Decision.FENCE_CLAIMED: Kind.FRESH,
    Decision.FENCE_TAKEOVER: Kind.FRESH,
    Decision.FENCE_SKIPPED: Kind.REPLAYED,
    Decision.FENCE_BUSY: Kind.REFUSED,
    Decision.FENCE_STALE: Kind.REFUSED,
    Decision.FENCE_COMPLETED: Kind.FRESH,
    Decision.FENCE_FAILED: Kind.FAILED,
    Decision.FENCE_RELEASED: Kind.OTHER,
    Decision.POISON: Kind.FAILED,
    Decision.RETRY: Kind.OTHER,
    Decision.STRANDED_RUN: Kind.OTHER,
    Decision.EXECUTION_ENDED: Kind.OTHER,
}

# Routine fence decisions: a log line only as the first line of their attempt (module docstring).
_ROUTINE = frozenset({Decision.FENCE_CLAIMED, Decision.FENCE_COMPLETED})
# Fields a caller may pass that the stored key already spells out (a key is
# `<namespace>#<stage>#r<n>#v:<label>`): a line that has the key does not repeat them.
_SPELLED_IN_KEY = ("label", "namespace")

# Fields Powertools puts on every line that a decision line does not repeat (Powertools drops a
# key whose value is None, and a line's `extra` wins over its appended keys): the function's ARN
# and memory size (the log group and the function's configuration say them).
_UNREPEATED: dict[str, Any] = {"function_arn": None, "function_memory_size": None}

_BOUND: ContextVar[dict[str, Any]] = ContextVar("retrysafe_telemetry_keys", default={})  # noqa: B039 - never mutated


@dataclass
class _Invocation:
    """What one handler invocation has decided so far: counts per (namespace, service, step), and
    the attempts (step, token) that already have a log line."""

    counts: dict[tuple[str, str, str], Counter[str]] = field(default_factory=dict)
    attempts_logged: set[tuple[str | None, str | None]] = field(default_factory=set)
    summarised: bool = False

    def flush(self) -> None:
        for (namespace, service, step), counts in self.counts.items():
            document = EphemeralMetrics(namespace=namespace, service=service)
            document.add_dimension(name="step", value=step)
            for name, count in counts.items():
                document.add_metric(name=name, unit=MetricUnit.Count, value=count)
            document.flush_metrics()
        self.counts.clear()


_INVOCATION: ContextVar[_Invocation | None] = ContextVar("retrysafe_telemetry_invocation", default=None)

Handler = TypeVar("Handler", bound=Callable[..., Any])


def metrics_per_invocation(handler: Handler) -> Handler:
    """Wrap a Lambda handler: its decisions' counts go out as one EMF document when it returns or
    raises (in place of Powertools' ``log_metrics``, which shares one metric set per process)."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = _Invocation()
        reset = _INVOCATION.set(invocation)
        try:
            return handler(*args, **kwargs)
        finally:
            _INVOCATION.reset(reset)
            invocation.flush()

    return wrapper  # type: ignore[return-value]


def _spelled_by_step_and_token(key: str | None, keys: dict[str, Any]) -> bool:
    """Whether a stored key is `<namespace>#<stage>#r<run>#v:{"step":..,"token":..}` of the line's
    own step and token (a fence's, a consumer's dedup record): the line has them, and ``key_hash``."""
    if not key or not keys["step"] or not keys["token"]:
        return False
    return key.endswith("#v:" + canonical_json({"step": keys["step"], "token": keys["token"]}))


def key_hash(key: str) -> str:
    """The hash a stored key is searched by in traces and logs (sha256, 32 hex)."""
    return hashlib.sha256(key.encode()).hexdigest()[:KEY_HASH_HEX]


class Telemetry:
    def __init__(self, *, logger: Logger, metrics: Metrics, tracer: Tracer | None = None) -> None:
        self.logger = logger
        self.metrics = metrics
        self._tracer = tracer

    @property
    def service(self) -> str:
        return str(getattr(self.metrics, "service", None) or self.logger.service or "service_undefined")

    @property
    def tracer(self) -> Tracer:
        # Powertools Tracers share one recorder; built on first use, so the tracer of the handler
        # that is running (and its disabled state, POWERTOOLS_TRACE_DISABLED) is the one annotated.
        if self._tracer is None:
            self._tracer = Tracer()
        return self._tracer

    @contextlib.contextmanager
    def bind(self, **keys: Any) -> Iterator[None]:
        """Keys (any of ``KEY_FIELDS``) that every decision inside the block carries."""
        unknown = set(keys) - set(KEY_FIELDS)
        if unknown:
            raise ValueError(f"not telemetry keys: {sorted(unknown)}")
        reset = _BOUND.set({**_BOUND.get(), **{k: v for k, v in keys.items() if v is not None}})
        try:
            yield
        finally:
            _BOUND.reset(reset)

    def keys(
        self, *, key: str | None, token: str | None, step: str | None, attempt: str | None
    ) -> dict[str, Any]:
        """The ``KEY_FIELDS`` of one decision (None where nothing says)."""
        bound = _BOUND.get()
        token = token or bound.get("token")
        parts = key_parts(token) if token else None
        if parts is None and key:
            parts = key_parts(key)
        return {
            ENTITY_KEY: bound.get(ENTITY_KEY) or (parts.business_id if parts else None),
            "key_hash": key_hash(key) if key else bound.get("key_hash"),
            "token": token,
            "step": step or bound.get("step"),
            "attempt": attempt or bound.get("attempt"),
            "run": bound.get("run") or (parts.run if parts else None),
        }

    @contextlib.contextmanager
    def summarised(self) -> Iterator[None]:
        """Routine fence decisions inside the block are counted only: the caller writes the line
        that sums the attempt up (consumer dedup: ``DedupMiss`` / ``DedupHit``)."""
        invocation = _INVOCATION.get()
        if invocation is None or invocation.summarised:
            yield
            return
        invocation.summarised = True
        try:
            yield
        finally:
            invocation.summarised = False

    def decision(
        self,
        outcome: Decision,
        *,
        key: str | None = None,
        token: str | None = None,
        step: str | None = None,
        attempt: str | None = None,
        **fields: Any,
    ) -> None:
        """Count the decision (one EMF document per invocation), log it as one structured INFO
        line unless it is routine (module docstring), and annotate the current trace segment."""
        keys = self.keys(key=key, token=token, step=step, attempt=attempt)
        invocation = _INVOCATION.get()
        if self._writes_line(outcome, keys, invocation):
            if key:
                fields = {k: v for k, v in fields.items() if k not in _SPELLED_IN_KEY or str(v) not in key}
            unrepeated = dict(_UNREPEATED)
            if keys["token"] and self.logger.get_correlation_id() == keys["token"]:
                unrepeated["correlation_id"] = None  # a step's correlation id is its token
            self.logger.info(
                outcome.value,
                extra={
                    **unrepeated,
                    "decision": outcome.value,
                    "kind": outcome.kind.value,
                    "key": None if _spelled_by_step_and_token(key, keys) else key,
                    **keys,
                    **fields,
                },
            )
        self._annotate(outcome, keys)
        group = (self.metrics.namespace or self.service, self.service, keys["step"] or "-")
        if invocation is None:  # not inside a wrapped handler: a document of its own, now
            invocation = _Invocation()
            invocation.counts[group] = Counter([outcome.value])
            invocation.flush()
        else:
            invocation.counts.setdefault(group, Counter())[outcome.value] += 1

    @staticmethod
    def _writes_line(outcome: Decision, keys: dict[str, Any], invocation: _Invocation | None) -> bool:
        if invocation is None:
            return True
        attempt = (keys["step"], keys["token"])
        if outcome in _ROUTINE and (invocation.summarised or attempt in invocation.attempts_logged):
            return False
        invocation.attempts_logged.add(attempt)
        return True

    def _annotate(self, outcome: Decision, keys: dict[str, Any]) -> None:
        tracer = self.tracer
        if tracer.disabled:
            return
        for name, value in (("decision", outcome.value), *keys.items()):
            if value is not None:
                # strings throughout: a filter expression then reads the same for every key
                tracer.put_annotation(key=name, value=str(value))

    def retry(self, *, reason: str, step: str | None = None, **fields: Any) -> None:
        """A retry is an expected event: INFO with a reason, plus a Retry metric."""
        self.decision(Decision.RETRY, step=step, reason=reason, **fields)
