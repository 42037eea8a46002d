"""Structured decisions: one log line (Powertools Logger) and one EMF metric (Powertools Metrics) each.

Every decision the layer takes (dedup hit, replay, fence claim, ...) goes through
``Telemetry.decision`` so the log fields (key, token, step, attempt, outcome) and the metric
dimensions (service, step) are the same everywhere. A metric is emitted with ``single_metric``
so ``step`` can be a dimension without mixing steps in one EMF blob. Retries, busy fences and
conflicts are expected under AWS retries, so they are logged at INFO, never as errors.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric


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


class Telemetry:
    def __init__(self, *, logger: Logger, metrics: Metrics) -> None:
        self.logger = logger
        self.metrics = metrics

    @property
    def service(self) -> str:
        return str(getattr(self.metrics, "service", None) or self.logger.service or "service_undefined")

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
        """Log one structured INFO event and emit one count metric with service and step dimensions."""
        self.logger.info(
            f"reliability decision: {outcome.value}",
            extra={
                "decision": outcome.value,
                "key": key,
                "token": token,
                "step": step,
                "attempt": attempt,
                **fields,
            },
        )
        dimensions = {"service": self.service, "step": step or "-"}
        with single_metric(
            name=outcome.value,
            unit=MetricUnit.Count,
            value=1,
            namespace=self.metrics.namespace or self.service,
            default_dimensions=dimensions,
        ):
            pass

    def retry(self, *, reason: str, step: str | None = None, **fields: Any) -> None:
        """A retry is an expected event: INFO with a reason, plus a Retry metric."""
        self.decision(Decision.RETRY, step=step, reason=reason, **fields)
