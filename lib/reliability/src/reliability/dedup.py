"""Consumer dedup on the fence mechanism: a ``FenceStore`` whose namespace is the consumer's name,
keyed by the fact an event states (``reliability.keys.Fact``: its type, business id and run) under
the store's own stage, so a redelivered record is never re-applied, the same fact under another
event id is the same record, and one consumer's record never suppresses another's (different
namespace, different key).

Across the deploy that stopped consumers keying on the event's own id: the token is the id the
publisher has always stamped (``Fact.id``, the same derivation), so every record stored before it,
and every per-event item keyed by it, matches the same fact after it: an event redelivered across
the deploy, or redriven from a DLQ within the dedup TTL, is a hit, not applied again. No
transition window and no second read is needed. Only a record stored under a hand-made id (the
bug this closes) does not match: if its fact's own event arrives after the deploy, it is applied
once more, as the old code would have done too (and the invariant checker reports the double).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reliability.effects import AtomicEffect
from reliability.keys import Fact
from reliability.record import Outcome, StepId
from reliability.runs import FenceStore
from reliability.telemetry import Decision, Telemetry


class ConsumerDedup:
    """Exactly-once application of a fact by one consumer, on the fence mechanism.

    Build the ``FenceStore`` on the dedup (idempotency) table with ``namespace=<consumer>``. A
    consumer whose effect writes one item per event lets that item carry the record
    (``Write.carries_record``), keyed by ``fact_id(fact)``: then the table holds none of its records.
    """

    def __init__(self, *, fences: FenceStore, consumer: str, telemetry: Telemetry) -> None:
        self._fences = fences
        self.consumer = consumer
        self._telemetry = telemetry

    @property
    def stage(self) -> str:
        """The stage whose facts this consumer applies (its store's)."""
        return self._fences.stage

    def fact_id(self, fact: Fact) -> str:
        """The fact's id in this consumer's stage: the dedup token, and the key of its per-event items."""
        return fact.id(stage=self.stage)

    def step(self, fact: Fact) -> StepId:
        return StepId(token=self.fact_id(fact), step=self.consumer)

    def _report(self, step: StepId, outcome: Outcome) -> Outcome:
        self._telemetry.decision(
            Decision.DEDUP_HIT if outcome.skipped else Decision.DEDUP_MISS,
            key=self._fences.external_key(step),
            token=step.token,
            step=self.consumer,
        )
        return outcome

    def apply_atomic(self, fact: Fact, build: Callable[[], AtomicEffect]) -> Outcome:
        """The consumer's DynamoDB writes and the dedup record in one transaction."""
        step = self.step(fact)
        with self._telemetry.summarised():  # the DedupMiss/DedupHit line sums the attempt up
            outcome = self._fences.run_atomic(step, build)
        return self._report(step, outcome)

    def apply_leased(
        self,
        fact: Fact,
        *,
        attempt_id: str,
        lease_seconds: float,
        effect: Callable[[str], Mapping[str, Any] | AtomicEffect],
    ) -> Outcome:
        """For external effects (e-mail, webhooks): the effect gets a stable idempotency key."""
        step = self.step(fact)
        with self._telemetry.summarised():  # the DedupMiss/DedupHit line sums the attempt up
            outcome = self._fences.run_leased(
                step, attempt_id=attempt_id, lease_seconds=lease_seconds, effect=effect
            )
        return self._report(step, outcome)
