"""SQS consumers: partial batch failures, poison messages to the DLQ, per-consumer dedup on fences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.stub import Stubber
from pydantic import BaseModel

from reliability import AtomicEffect, FenceStore
from reliability.batch import DeadLetters, parse_body, process_batch
from reliability.dedup import ConsumerDedup
from reliability.errors import PoisonMessage
from reliability.keys import Fact, derive_key
from reliability.telemetry import Telemetry, key_hash
from reliability_helpers import (
    IDEMPOTENCY,
    REGION,
    FakeClock,
    aws_client,
    counter_add,
    counter_value,
    make_telemetry,
    read_emitted,
)

SRC = Path(__file__).resolve().parents[1] / "src"


class Event(BaseModel):
    event_id: str
    order_id: str
    total_cents: int


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{i}",
                "receiptHandle": f"rh-{i}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:announce",
                "awsRegion": REGION,
            }
            for i, body in enumerate(bodies)
        ]
    }


def body(event_id: str, total: int = 100) -> str:
    return json.dumps({"event_id": event_id, "order_id": "o-1", "total_cents": total})


@pytest.fixture
def sqs(aws: None) -> Any:
    return aws_client("sqs")


@pytest.fixture
def dlq(sqs: Any) -> str:
    return str(sqs.create_queue(QueueName="announce-dlq")["QueueUrl"])


def dead_lettered(sqs: Any, url: str) -> list[dict[str, Any]]:
    response = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return list(response.get("Messages", []))


def consumer(ddb: Any, name: str, telemetry: Telemetry) -> ConsumerDedup:
    fences = FenceStore(
        client=ddb,
        table_name=IDEMPOTENCY,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace=name,
        clock=FakeClock(),
    )
    return ConsumerDedup(fences=fences, consumer=name, telemetry=telemetry)


def fact(event_id: str) -> Fact:
    """These tests' events state one fact each, named by their id."""
    return Fact(kind="Counted", subject=event_id)


def counting_handler(dedup: ConsumerDedup) -> Any:
    def handle(record: SQSRecord) -> None:
        event = parse_body(record, Event)
        dedup.apply_atomic(
            fact(event.event_id),
            lambda: AtomicEffect({"applied": event.event_id}, [counter_add(dedup.consumer)]),
        )

    return handle


def test_success_and_transient_failure_are_reported_per_record(
    ddb: Any, sqs: Any, dlq: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a batch whose second record fails transiently
    telemetry = make_telemetry()

    def handle(record: SQSRecord) -> None:
        if record.message_id == "m-1":
            raise ConnectionError("downstream timeout")

    # When it is processed
    response = process_batch(
        sqs_event(body("e0"), body("e1"), body("e2")),
        handler=handle,
        dead_letters=DeadLetters(sqs, dlq, "announce"),
        telemetry=telemetry,
    )
    # Then only that record is reported for redelivery; nothing went to the DLQ
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert dead_lettered(sqs, dlq) == []
    # And the retry is an INFO event with its reason, not an error
    emitted = read_emitted(capsys.readouterr().out)
    [retry] = [line for line in emitted.decisions() if line["decision"] == "Retry"]
    assert (retry["level"], retry["reason"], retry["message_id"]) == ("INFO", "ConnectionError", "m-1")


def test_a_whole_failed_batch_is_reported_not_raised(ddb: Any, sqs: Any, dlq: str) -> None:
    def handle(record: SQSRecord) -> None:
        raise ConnectionError("down")

    response = process_batch(
        sqs_event(body("e0"), body("e1")),
        handler=handle,
        dead_letters=DeadLetters(sqs, dlq, "announce"),
        telemetry=make_telemetry(),
    )
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == ["m-0", "m-1"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [("{not json", "unparseable body"), ('{"event_id": "e"}', "wrong shape"), ('"a string"', "wrong shape")],
)
def test_poison_goes_to_the_dlq_with_reason_and_source_and_is_acknowledged(
    ddb: Any, sqs: Any, dlq: str, raw: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a batch with one record that can never succeed
    dedup = consumer(ddb, "announce", make_telemetry())
    # When it is processed
    response = process_batch(
        sqs_event(body("ok"), raw),
        handler=counting_handler(dedup),
        dead_letters=DeadLetters(sqs, dlq, "announce"),
        telemetry=make_telemetry(),
    )
    # Then it is not retried: it sits in the DLQ with its reason and source, the rest applied
    assert response == {"batchItemFailures": []}
    [message] = dead_lettered(sqs, dlq)
    assert message["Body"] == raw
    assert message["MessageAttributes"]["reason"]["StringValue"].startswith(reason)
    assert message["MessageAttributes"]["source"]["StringValue"] == "announce"
    assert counter_value(ddb, "announce") == 1
    assert "PoisonMessage" in read_emitted(capsys.readouterr().out).metric_names()


class PlainEvent:
    """A model without pydantic: pydantic's `model_validate`, a ValueError for a wrong shape."""

    def __init__(self, event_id: str) -> None:
        self.event_id = event_id

    @classmethod
    def model_validate(cls, obj: Any, /) -> PlainEvent:
        if not isinstance(obj, dict) or not isinstance(obj.get("event_id"), str):
            raise ValueError("event_id (missing)")  # noqa: TRY004 - the protocol: ValueError is a wrong shape
        return cls(obj["event_id"])


def test_a_plain_model_parses_and_its_value_error_is_poison_with_its_words() -> None:
    record = SQSRecord({"messageId": "m-1", "body": body("e-1"), "attributes": {}})
    assert parse_body(record, PlainEvent).event_id == "e-1"
    with pytest.raises(PoisonMessage) as refused:
        parse_body(SQSRecord({"messageId": "m-2", "body": "[1]", "attributes": {}}), PlainEvent)
    assert refused.value.reason == "wrong shape: event_id (missing)"


class WordlessModel:
    @classmethod
    def model_validate(cls, obj: Any, /) -> WordlessModel:
        raise ValueError


def test_a_wordless_value_error_is_poison_naming_the_body() -> None:
    with pytest.raises(PoisonMessage) as refused:
        parse_body(SQSRecord({"messageId": "m-1", "body": "{}", "attributes": {}}), WordlessModel)
    assert refused.value.reason == "wrong shape: body"


def test_parsing_a_body_loads_no_pydantic() -> None:
    """A function whose models are plain does not pay pydantic's import on its cold start."""
    probe = "import sys, reliability.batch; print(sorted(m for m in sys.modules if m.startswith('pydantic')))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(SRC), "AWS_DEFAULT_REGION": "us-east-1"},
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_explicit_poison_message_from_the_handler(ddb: Any, sqs: Any, dlq: str) -> None:
    def handle(record: SQSRecord) -> None:
        raise PoisonMessage("conflicting execution")

    response = process_batch(
        sqs_event(body("e")),
        handler=handle,
        dead_letters=DeadLetters(sqs, dlq, "worker"),
        telemetry=make_telemetry(),
    )
    assert response == {"batchItemFailures": []}
    [message] = dead_lettered(sqs, dlq)
    assert message["MessageAttributes"]["reason"]["StringValue"] == "conflicting execution"


def test_a_failed_dlq_send_leaves_the_record_for_redelivery(ddb: Any) -> None:
    # Given the DLQ cannot be reached
    client = aws_client("sqs")
    stub = Stubber(client)
    stub.add_client_error("send_message", service_error_code="ServiceUnavailable", http_status_code=503)

    def handle(record: SQSRecord) -> None:
        raise PoisonMessage("bad")

    # Then the poison record is reported as failed rather than lost
    with stub:
        response = process_batch(
            sqs_event("x"),
            handler=handle,
            dead_letters=DeadLetters(client, "url", "announce"),
            telemetry=make_telemetry(),
        )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}


def test_a_redelivered_record_is_never_reapplied(
    ddb: Any, sqs: Any, dlq: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a record applied once
    telemetry = make_telemetry()
    dedup = consumer(ddb, "audit", telemetry)
    letters = DeadLetters(sqs, dlq, "audit")
    process_batch(
        sqs_event(body("e-1")), handler=counting_handler(dedup), dead_letters=letters, telemetry=telemetry
    )
    # When SQS delivers it again (alongside a new one)
    response = process_batch(
        sqs_event(body("e-1"), body("e-2")),
        handler=counting_handler(dedup),
        dead_letters=letters,
        telemetry=telemetry,
    )
    # Then the duplicate is a dedup hit and the counter moved only for the new event
    assert response == {"batchItemFailures": []}
    assert counter_value(ddb, "audit") == 2
    names = read_emitted(capsys.readouterr().out).metric_names()
    assert names.count("DedupMiss") == 2
    assert names.count("DedupHit") == 1


def test_consumers_are_independent(ddb: Any, sqs: Any, dlq: str) -> None:
    # Given two consumers of the same event on the same dedup table
    telemetry = make_telemetry()
    announce, audit = consumer(ddb, "announce", telemetry), consumer(ddb, "audit", telemetry)
    letters = DeadLetters(sqs, dlq, "x")
    event = sqs_event(body("e-1"))
    # When each processes it
    process_batch(event, handler=counting_handler(announce), dead_letters=letters, telemetry=telemetry)
    process_batch(event, handler=counting_handler(audit), dead_letters=letters, telemetry=telemetry)
    # Then neither suppressed the other
    assert counter_value(ddb, "announce") == 1
    assert counter_value(ddb, "audit") == 1
    assert announce.step(fact("e-1")) != audit.step(fact("e-1"))


def test_leased_dedup_for_external_effects(ddb: Any) -> None:
    dedup = consumer(ddb, "announce", make_telemetry())
    sent: list[str] = []

    def send(key: str) -> dict[str, Any]:
        sent.append(key)
        return {"message_id": "mail-1"}

    first = dedup.apply_leased(fact("e-9"), attempt_id="A", lease_seconds=10, effect=send)
    second = dedup.apply_leased(fact("e-9"), attempt_id="B", lease_seconds=10, effect=send)
    assert (first.skipped, second.skipped) == (False, True)
    assert len(sent) == 1


def test_an_empty_poison_body_still_reaches_the_dlq(ddb: Any, sqs: Any, dlq: str) -> None:
    dedup = consumer(ddb, "announce", make_telemetry())
    response = process_batch(
        sqs_event(""),
        handler=counting_handler(dedup),
        dead_letters=DeadLetters(sqs, dlq, "announce"),
        telemetry=make_telemetry(),
    )
    assert response == {"batchItemFailures": []}
    [message] = dead_lettered(sqs, dlq)
    assert message["Body"] == "(empty body)"


def test_the_dedup_key_is_the_facts_in_the_stores_stage_as_stored_before_the_fact_keys(ddb: Any) -> None:
    # A consumer keys on the fact (kind, business id, run) in its own stage, whatever id the event
    # declares; that key is the one records were stored under when consumers keyed on the
    # publisher's event id (the same derivation), so stored records still match across the deploy.
    fences = FenceStore(
        client=ddb,
        table_name=IDEMPOTENCY,
        ttl_seconds=3600,
        telemetry=make_telemetry(),
        namespace="announce",
        stage="dev",
    )
    dedup = ConsumerDedup(fences=fences, consumer="announce", telemetry=make_telemetry())
    stated = Fact(kind="OrderCompleted", subject="o-1", run=2)
    publishers_id = "OrderCompleted#dev#r2#v:o-1"
    assert dedup.fact_id(stated) == publishers_id
    stored_before = derive_key("announce", stage="dev", identity={"token": publishers_id, "step": "announce"})
    assert fences.external_key(dedup.step(stated)) == stored_before.value


def test_a_consumers_miss_and_hit_are_told_by_the_fact_they_apply(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a consumer whose decisions this test reads
    dedup = consumer(ddb, "announce", make_telemetry())
    stated = fact("e-1")
    capsys.readouterr()
    # When the same fact is applied twice
    for _ in range(2):
        dedup.apply_atomic(stated, lambda: AtomicEffect({"applied": 1}, [counter_add("announce")]))
    # Then a miss, then a hit, each naming the fact's token, the consumer and the record's key
    lines = [
        line for line in read_emitted(capsys.readouterr().out).decisions() if "Dedup" in line["decision"]
    ]
    expected = {
        "token": dedup.fact_id(stated),
        "step": "announce",
        "key_hash": key_hash(
            derive_key(
                "announce", stage="-", identity={"token": dedup.fact_id(stated), "step": "announce"}
            ).value
        ),
    }
    assert [line["decision"] for line in lines] == ["DedupMiss", "DedupHit"]
    assert [{k: line[k] for k in expected} for line in lines] == [expected, expected]
