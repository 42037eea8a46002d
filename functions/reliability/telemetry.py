"""Structured decisions: one log line (Powertools Logger), one EMF metric (Powertools Metrics) and
X-Ray annotations (Powertools Tracer) each.

Every decision the layer takes (dedup hit, replay, fence claim, ...) goes through
``Telemetry.decision`` so every signal carries the same keys (``KEY_FIELDS``): order id,
idempotency key hash, execution token, step, attempt and run. They come from the call, else from
what the caller bound for the invocation (``Telemetry.bind``), else from the key and token
themselves (``reliability.keys.key_parts``: a token or event id names its business id and run).
A log line also keeps the full stored ``key``; a trace is found by ``key_hash`` (annotations are
indexed, so they carry the hash, never a raw key).

The metric is emitted with ``single_metric`` so ``step`` can be a dimension without mixing steps
in one EMF blob. Each ``Decision`` says whether it is fresh work or a replay of stored work
(``Decision.kind``): the split the dashboard shows. Retries, busy fences and conflicts are
expected under AWS retries, so they are logged at INFO, never as errors.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextvars import ContextVar
from enum import Enum
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from reliability.keys import key_parts

# The keys in every signal, in this order in log lines and as X-Ray annotation names.
KEY_FIELDS = ("order_id", "key_hash", "token", "step", "attempt", "run")
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
    STRANDED_ORDER = "StrandedOrders"  # an ACCEPTED order's message re-sent by the sweeper

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
    Decision.STRANDED_ORDER: Kind.OTHER,
}

_BOUND: ContextVar[dict[str, Any]] = ContextVar("retrysafe_telemetry_keys", default={})  # noqa: B039 - never mutated


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
            "order_id": bound.get("order_id") or (parts.business_id if parts else None),
            "key_hash": key_hash(key) if key else bound.get("key_hash"),
            "token": token,
            "step": step or bound.get("step"),
            "attempt": attempt or bound.get("attempt"),
            "run": bound.get("run") or (parts.run if parts else None),
        }

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
        """Log one structured INFO event, emit one count metric (service and step dimensions) and
        annotate the current trace segment with the keys."""
        keys = self.keys(key=key, token=token, step=step, attempt=attempt)
        self.logger.info(
            f"reliability decision: {outcome.value}",
            extra={"decision": outcome.value, "kind": outcome.kind.value, "key": key, **keys, **fields},
        )
        self._annotate(outcome, keys)
        dimensions = {"service": self.service, "step": keys["step"] or "-"}
        with single_metric(
            name=outcome.value,
            unit=MetricUnit.Count,
            value=1,
            namespace=self.metrics.namespace or self.service,
            default_dimensions=dimensions,
        ):
            pass

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
