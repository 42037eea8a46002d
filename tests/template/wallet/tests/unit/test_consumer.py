"""The audit consumer on the library's `EventConsumer`: one entry per fact, whatever the number
of deliveries or the event id a delivery carries; another stage's event is poison."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from reliability.consumers import EventConsumer, effect_of
from reliability.declaration import FENCES
from reliability.dedup import ConsumerDedup
from reliability.errors import PoisonMessage
from reliability.runs import FenceStore
from reliability.telemetry import Telemetry

from wallet_api.domain import AUDIT_ENTRY, CompletedEvent, completed_fact
from wallet_api.workflow import SERVICE

from support import NOW, STAGE, physical

ENTITY_ID = "tr-0123456789abcdef0123456789abcdef"


class Tables:
    def table(self, name: str) -> str:
        return physical(name)


def _consumer(dynamodb: Any, telemetry: Telemetry) -> EventConsumer[Tables, CompletedEvent]:
    name = SERVICE.consumers[0].name
    fences = FenceStore(
        client=dynamodb,
        table_name=physical(FENCES),
        telemetry=telemetry,
        ttl_seconds=3600,
        namespace=name,
        stage=STAGE,
        clock=NOW.timestamp,
    )
    return EventConsumer(
        name=name,
        effect=effect_of(SERVICE, name),
        ports=Tables(),
        dedup=ConsumerDedup(fences=fences, consumer=name, telemetry=telemetry),
    )


def _event(**changes: Any) -> CompletedEvent:
    event = CompletedEvent(
        event_id=completed_fact(ENTITY_ID, 1).id(stage=STAGE),
        stage=STAGE,
        entity_id=ENTITY_ID,
        run=1,
        source="acct-1",
        target="acct-2",
        amount=1_250,
        occurred_at=NOW.isoformat(),
    )
    return replace(event, **changes)


def test_each_fact_is_audited_once_whatever_id_a_delivery_carries(
    dynamodb: Any, telemetry: Telemetry
) -> None:
    consumer = _consumer(dynamodb, telemetry)

    applied = [
        consumer.apply(_event()),
        consumer.apply(_event()),
        consumer.apply(_event(event_id="hand-made")),
    ]

    assert applied == [True, False, False]
    entries = dynamodb.scan(TableName=physical("audit"))["Items"]
    assert [item["sk"]["S"] for item in entries] == [
        f"{AUDIT_ENTRY}{completed_fact(ENTITY_ID, 1).id(stage=STAGE)}"
    ]


def test_another_stages_event_is_poison(dynamodb: Any, telemetry: Telemetry) -> None:
    with pytest.raises(PoisonMessage):
        _consumer(dynamodb, telemetry).apply(_event(stage="prod"))


def test_an_event_of_another_shape_is_refused_when_parsed() -> None:
    with pytest.raises(ValueError, match="not a"):
        CompletedEvent.parse({"type": "SomethingElse"})
    body = _event().model_dump()
    assert CompletedEvent.parse(body) == _event()
