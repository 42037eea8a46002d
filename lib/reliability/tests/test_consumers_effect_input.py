"""What an event consumer's effect is given: the consumer's ports, and the event in its JSON form
(a date as its ISO string) under the fact's id in this stage and this consumer's stage, whatever
id and stage the event itself carried."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel

from reliability.consumers import EventConsumer
from reliability.dedup import ConsumerDedup
from reliability.keys import Fact
from reliability.runs import FenceStore
from reliability.telemetry import Telemetry
from reliability_helpers import FENCES, FakeClock, entry_put

STAGE = "dev"


class VisitPaid(BaseModel):
    event_id: str
    visit_id: str
    paid_on: date
    run: int = 1
    stage: str | None = STAGE

    def fact(self) -> Fact:
        return Fact(kind="VisitPaid", subject=self.visit_id, run=self.run)


class Ledger:
    """The effect's ports: what it was given, each time."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []


def record(ports: Ledger, body: Any) -> list[Any]:
    ports.seen.append(dict(body))
    return [entry_put(body["event_id"], 1)]


def test_the_effect_gets_the_ports_and_the_events_json_form_under_the_fact(
    ddb: Any, telemetry: Telemetry
) -> None:
    fences = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace="ledger",
        clock=FakeClock(),
        stage=STAGE,
    )
    dedup = ConsumerDedup(fences=fences, consumer="ledger", telemetry=telemetry)
    ledger = Ledger()
    consumer: EventConsumer[Ledger, VisitPaid] = EventConsumer(
        name="ledger", effect=record, ports=ledger, dedup=dedup
    )
    unstamped = VisitPaid(event_id="e-1", visit_id="v-1", paid_on=date(2026, 11, 27), stage=None)
    assert consumer.apply(unstamped)
    assert ledger.seen == [
        {
            "event_id": Fact(kind="VisitPaid", subject="v-1").id(stage=STAGE),
            "visit_id": "v-1",
            "paid_on": "2026-11-27",
            "run": 1,
            "stage": STAGE,
        }
    ]
