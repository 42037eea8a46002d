"""The generic event consumer on the tests' own service (`two_step_service`'s audit consumer):
each fact applied once whatever id it comes under, another stage's event refused, and the
service's own check (the hook) deciding what else is poison."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import pytest
from two_step_service import SERVICE, audit

from reliability.consumers import PUT_ONCE_REFUSED, EventConsumer, effect_of
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


class UnknownVisit(Exception):
    pass


@dataclass
class CheckedAudit(EventConsumer[None, VisitPaid]):
    """The service's check: only visits it knows, and `PoisonMessage` raised directly too."""

    refusals: ClassVar[tuple[type[Exception], ...]] = (UnknownVisit,)
    known: frozenset[str] = frozenset({"v-1"})

    def verify(self, event: VisitPaid) -> None:
        if event.visit_id not in self.known:
            raise UnknownVisit(f"no visit {event.visit_id!r}")
        if event.run > 1:
            raise PoisonMessage(f"visit {event.visit_id} has one run")

    def result(self, event: VisitPaid) -> dict[str, Any]:
        return {"visit_id": event.visit_id}


def _dedup(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> ConsumerDedup:
    fences = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace="audit",
        clock=clock,
        stage=STAGE,
    )
    return ConsumerDedup(fences=fences, consumer="audit", telemetry=telemetry)


@pytest.fixture
def consumer(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> CheckedAudit:
    return CheckedAudit(
        name="audit", effect=effect_of(SERVICE, "audit"), ports=None, dedup=_dedup(ddb, telemetry, clock)
    )


def _audits(ddb: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = ddb.scan(TableName=ENTRIES)["Items"]
    return items


def test_the_declared_effect_is_resolved_by_its_path() -> None:
    assert effect_of(SERVICE, "audit") is audit


def test_one_fact_is_applied_once_under_any_event_id(ddb: Any, consumer: CheckedAudit) -> None:
    applied = [
        consumer.apply(VisitPaid(event_id=event_id, visit_id="v-1")) for event_id in ("e-1", "e-1", "e-2")
    ]
    assert applied == [True, False, False]
    [entry] = _audits(ddb)
    # the effect saw the fact's id in this stage, never the event's own
    assert entry["sk"]["S"] == f"audit#{Fact(kind='VisitPaid', subject='v-1').id(stage=STAGE)}"
    assert entry["stage"]["S"] == STAGE


def test_another_run_is_another_fact(ddb: Any, consumer: CheckedAudit) -> None:
    plain: EventConsumer[None, VisitPaid] = EventConsumer(
        name="audit", effect=consumer.effect, ports=None, dedup=consumer.dedup
    )
    assert plain.apply(VisitPaid(event_id="e-1", visit_id="v-1", run=1))
    assert plain.apply(VisitPaid(event_id="e-1", visit_id="v-1", run=2))
    assert len(_audits(ddb)) == 2


def test_another_stages_event_is_poison_and_applies_nothing(ddb: Any, consumer: CheckedAudit) -> None:
    with pytest.raises(PoisonMessage, match="an event of stage 'prod'; this consumer is stage 'dev'"):
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1", stage="prod"))
    assert consumer.apply(
        VisitPaid(event_id="e-1", visit_id="v-1", stage=None)
    )  # unstamped: judged by its item
    assert len(_audits(ddb)) == 1


def test_the_services_check_refuses_with_its_reason(ddb: Any, consumer: CheckedAudit) -> None:
    with pytest.raises(PoisonMessage, match="no visit 'v-9'") as refused:
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-9"))
    assert isinstance(refused.value.__cause__, UnknownVisit)
    with pytest.raises(PoisonMessage, match="has one run"):
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1", run=2))
    assert _audits(ddb) == []


def test_the_dedup_record_stores_the_services_result(ddb: Any, consumer: CheckedAudit) -> None:
    consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    [record] = ddb.scan(TableName=FENCES)["Items"]
    assert json.loads(record["result"]["S"]) == {"visit_id": "v-1"}


def _put_once_audit(ports: Any, event: Any) -> list[Any]:
    [write] = audit(ports, event)
    put = {**write.entry["Put"], "ConditionExpression": "attribute_not_exists(pk)"}
    return [type(write)({"Put": put})]


def test_a_copy_after_the_dedup_record_expired_is_poison_with_its_reason(
    ddb: Any, consumer: CheckedAudit
) -> None:
    """The dedup record's TTL ran out and a redrive brings the event back: the put-once item of
    the first delivery refuses it. A retry would meet the same item, so it is a dead letter with a
    reason now, not one without after the queue's receives run out."""
    put_once: EventConsumer[None, VisitPaid] = EventConsumer(
        name="audit", effect=_put_once_audit, ports=None, dedup=consumer.dedup
    )
    assert put_once.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    [record] = ddb.scan(TableName=FENCES)["Items"]
    ddb.delete_item(TableName=FENCES, Key={"id": record["id"]})  # TTL deletion
    with pytest.raises(PoisonMessage) as refused:
        put_once.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert refused.value.reason == f"{PUT_ONCE_REFUSED} (write 0); nothing applied"
    assert isinstance(refused.value.__cause__, EffectConditionFailed)
    assert len(_audits(ddb)) == 1
    assert ddb.scan(TableName=FENCES)["Items"] == []  # the record did not commit without its effect


def _needs_the_visit(ports: Any, event: Any) -> list[Any]:
    [write] = audit(ports, event)
    put = {**write.entry["Put"], "ConditionExpression": "attribute_exists(pk)"}
    return [type(write)({"Put": put})]


def test_another_refused_condition_is_raised_for_the_queue_to_retry(ddb: Any, consumer: CheckedAudit) -> None:
    """Only a put-once refusal is sure to repeat; a condition on an item another event may still
    create (an out-of-order delivery) is left to the queue's retries."""
    waiting: EventConsumer[None, VisitPaid] = EventConsumer(
        name="audit", effect=_needs_the_visit, ports=None, dedup=consumer.dedup
    )
    with pytest.raises(EffectConditionFailed):
        waiting.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert _audits(ddb) == []


# An effect may return plain transaction entries (dicts, as `AtomicEffect` takes them) rather
# than `Write`s: a put-once entry refused because its item exists is still a dead letter with its
# reason, and any other refused condition still goes back to the queue.
def _plain(ddb: Any, telemetry: Telemetry, effect: Any) -> EventConsumer[None, VisitPaid]:
    dedup = _dedup(ddb, telemetry, FakeClock())
    return EventConsumer(name="audit", effect=effect, ports=None, dedup=dedup)


def _put_once(ports: Any, event: Any) -> list[Any]:
    """A ledger entry per visit, put once (a plain entry, no BusinessError attached)."""
    entry = entry_put(event["visit_id"], 1)
    return [{"Put": {**entry["Put"], "ConditionExpression": "attribute_not_exists(pk)"}}]


def _needs_the_entry(ports: Any, event: Any) -> list[Any]:
    entry = entry_put(event["visit_id"], 1)
    return [{"Put": {**entry["Put"], "ConditionExpression": "attribute_exists(pk)"}}]


def test_a_plain_put_once_entry_refused_is_a_dead_letter_reason(ddb: Any, telemetry: Telemetry) -> None:
    consumer = _plain(ddb, telemetry, _put_once)
    assert consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    [record] = ddb.scan(TableName=FENCES)["Items"]
    ddb.delete_item(TableName=FENCES, Key={"id": record["id"]})  # its dedup record expired
    with pytest.raises(PoisonMessage) as refused:
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert refused.value.reason == f"{PUT_ONCE_REFUSED} (write 0); nothing applied"
    assert len(ddb.scan(TableName=ENTRIES)["Items"]) == 1


def test_a_plain_entry_with_another_condition_is_retried(ddb: Any, telemetry: Telemetry) -> None:
    consumer = _plain(ddb, telemetry, _needs_the_entry)
    with pytest.raises(EffectConditionFailed):
        consumer.apply(VisitPaid(event_id="e-1", visit_id="v-1"))
    assert ddb.scan(TableName=ENTRIES)["Items"] == []
