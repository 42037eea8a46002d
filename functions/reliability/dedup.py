"""Consumer dedup on the fence mechanism: a ``FenceStore`` whose namespace is the consumer's name,
keyed by the business event id, so a redelivered record is never re-applied and one consumer's
record never suppresses another's (different namespace, different key).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reliability.effects import AtomicEffect
from reliability.record import Outcome, StepId
from reliability.runs import FenceStore
from reliability.telemetry import Decision, Telemetry


class ConsumerDedup:
    """Exactly-once application of an event by one consumer, on the fence mechanism.

    Build the ``FenceStore`` on the dedup (idempotency) table with ``namespace=<consumer>``. A
    consumer whose effect writes one item per event lets that item carry the record
    (``Write.carries_record``): then the table holds none of its records.
    """

    def __init__(self, *, fences: FenceStore, consumer: str, telemetry: Telemetry) -> None:
        self._fences = fences
        self.consumer = consumer
        self._telemetry = telemetry

    def step(self, event_id: str) -> StepId:
        return StepId(token=event_id, step=self.consumer)

    def _report(self, step: StepId, outcome: Outcome) -> Outcome:
        self._telemetry.decision(
            Decision.DEDUP_HIT if outcome.skipped else Decision.DEDUP_MISS,
            key=self._fences.external_key(step),
            token=step.token,
            step=self.consumer,
        )
        return outcome

    def apply_atomic(self, event_id: str, build: Callable[[], AtomicEffect]) -> Outcome:
        """The consumer's DynamoDB writes and the dedup record in one transaction."""
        step = self.step(event_id)
        with self._telemetry.summarised():  # the DedupMiss/DedupHit line sums the attempt up
            outcome = self._fences.run_atomic(step, build)
        return self._report(step, outcome)

    def apply_leased(
        self,
        event_id: str,
        *,
        attempt_id: str,
        lease_seconds: float,
        effect: Callable[[str], Mapping[str, Any] | AtomicEffect],
    ) -> Outcome:
        """For external effects (e-mail, webhooks): the effect gets a stable idempotency key."""
        step = self.step(event_id)
        with self._telemetry.summarised():  # the DedupMiss/DedupHit line sums the attempt up
            outcome = self._fences.run_leased(
                step, attempt_id=attempt_id, lease_seconds=lease_seconds, effect=effect
            )
        return self._report(step, outcome)
