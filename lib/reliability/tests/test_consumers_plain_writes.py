"""An event consumer whose effect returns plain transaction entries (dicts, as `AtomicEffect`
takes them) rather than `Write`s: a put-once entry refused because its item exists is still a
dead letter with its reason, and any other refused condition still goes back to the queue."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pytest

from reliability.consumers import PUT_ONCE_REFUSED, EventConsumer
from reliability.dedup import ConsumerDedup
from reliability.errors import EffectConditionFailed, PoisonMessage
from reliability.keys import Fact
from reliability.runs import FenceStore
from reliability.telemetry import Telemetry
from reliability_helpers import ENTRIES, FENCES, FakeClock, entry_put

STAGE = "dev"


@dataclass(frozen=True)
class VisitPaid:
    event_id: str
    visit_id: str
    run: int = 1
    stage: str | None = STAGE

    def fact(self) -> Fact:
        return Fact(kind="VisitPaid", subject=self.visit_id, run=self.run)

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        return asdict(self)


def _consumer(ddb: Any, telemetry: Telemetry, effect: Any) -> EventConsumer[None, VisitPaid]:
    fences = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace="audit",
        clock=FakeClock(),
        stage=STAGE,
    )
    dedup = ConsumerDedup(fences=fences, consumer="audit", telemetry=telemetry)
    return EventConsumer(name="audit", effect=effect, ports=None, dedup=dedup)


def _put_once(ports: Any, event: Any) -> list[Any]:
    """A ledger entry per visit, put once (a plain entry, no BusinessError attached)."""
    entry = entry_put(event["visit_id"], 1)
    return [{"Put": {**entry["Put"], "ConditionExpression": "attribute_not_exists(pk)"}}]


def _needs_the_entry(ports: Any, event: Any) -> list[Any]:
    entry = entry_put(event["visit_id"], 1)
    return [{"Put": {**entry["Put"], "ConditionExpression": "attribute_exists(pk)"}}]


def test_a_plain_put_once_entry_refused_is_a_dead_letter_reason(ddb: Any, telemetry: Telemetry) -> None:
    consumer = _consumer(ddb, telemetry, _put_once)
    assert consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    [record] = ddb.scan(TableName=FENCES)["Items"]
    ddb.delete_item(TableName=FENCES, Key={"id": record["id"]})  # its dedup record expired
    with pytest.raises(PoisonMessage) as refused:
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert refused.value.reason == f"{PUT_ONCE_REFUSED} (write 0); nothing applied"
    assert len(ddb.scan(TableName=ENTRIES)["Items"]) == 1


def test_a_plain_entry_with_another_condition_is_retried(ddb: Any, telemetry: Telemetry) -> None:
    consumer = _consumer(ddb, telemetry, _needs_the_entry)
    with pytest.raises(EffectConditionFailed):
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert ddb.scan(TableName=ENTRIES)["Items"] == []
