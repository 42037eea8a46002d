"""A dead letter and a retry as operators read them: the letter's attributes exactly, a pydantic
model's wrong shape worded field by field without the input, and each decision line's fields."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import BaseModel, model_validator
from test_batch import sqs_event

from reliability.batch import REASON_MAX, DeadLetters, parse_body, process_batch
from reliability.errors import PoisonMessage
from reliability_helpers import make_telemetry, read_emitted


class SentLetters:
    """A DLQ client that keeps what it is sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **params: Any) -> dict[str, Any]:
        self.sent.append(params)
        return {"MessageId": f"dlq-{len(self.sent)}"}


def _record(body: str, message_id: str = "m-7") -> SQSRecord:
    return SQSRecord({"messageId": message_id, "body": body, "attributes": {"ApproximateReceiveCount": "3"}})


def _attributes(sent: dict[str, Any]) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in sent["MessageAttributes"].items()}


def test_a_letter_carries_its_reason_source_and_message_id_as_attributes() -> None:
    client = SentLetters()
    DeadLetters(client, "dlq-url", "tally").send(_record('{"a": 1}'), "why " * 100)
    [sent] = client.sent
    assert (sent["QueueUrl"], sent["MessageBody"]) == ("dlq-url", '{"a": 1}')
    assert _attributes(sent) == {
        "reason": ("why " * 100)[:REASON_MAX],
        "source": "tally",
        "message_id": "m-7",
    }
    assert REASON_MAX == 256  # SQS allows more; a reason is a line an operator reads


def test_a_letter_without_words_says_poison() -> None:
    client = SentLetters()
    DeadLetters(client, "dlq-url", "tally").send(_record("x"), "")
    assert _attributes(client.sent[0])["reason"] == "poison"


class Reading(BaseModel):
    gauge: str
    value: int
    unit: str

    @model_validator(mode="after")
    def positive(self) -> Reading:
        if self.value < 0:
            raise ValueError("a reading is never negative")
        return self


class Nested(BaseModel):
    readings: list[Reading]


class Wide(BaseModel):
    a: int
    b: int
    c: int
    d: int
    e: int
    f: int


def _reason(body: str, model: Any) -> str:
    with pytest.raises(PoisonMessage) as refused:
        parse_body(_record(body), model)
    return refused.value.reason


def test_a_pydantic_wrong_shape_names_each_field_with_why_and_never_the_input() -> None:
    reason = _reason('{"gauge": "secret-gauge-name", "value": "seven"}', Reading)
    assert reason == (
        "wrong shape: value (Input should be a valid integer, unable to parse string as an integer); "
        "unit (Field required)"
    )
    assert "seven" not in reason


def test_a_nested_field_is_named_by_its_path_and_a_whole_body_error_by_body() -> None:
    nested = (
        '{"readings": [{"gauge": "g", "value": 1, "unit": "u"}, {"gauge": "g", "value": "x", "unit": "u"}]}'
    )
    assert _reason(nested, Nested) == (
        "wrong shape: readings.1.value "
        "(Input should be a valid integer, unable to parse string as an integer)"
    )
    assert _reason('{"gauge": "g", "value": -1, "unit": "u"}', Reading) == (
        "wrong shape: body (Value error, a reading is never negative)"
    )


def test_at_most_five_problems_are_named() -> None:
    assert _reason("{}", Wide) == "wrong shape: " + "; ".join(f"{f} (Field required)" for f in "abcde")


def test_a_poison_and_a_retry_decision_name_their_consumer_message_and_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def handle(record: SQSRecord) -> None:
        if record.message_id == "m-0":
            raise PoisonMessage("not a reading")
        raise ConnectionError("down")

    event = sqs_event("{}", "{}")
    event["Records"][1]["attributes"]["ApproximateReceiveCount"] = "4"
    response = process_batch(
        event,
        handler=handle,
        dead_letters=DeadLetters(SentLetters(), "dlq-url", "tally"),
        telemetry=make_telemetry(),
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    decisions = {line["decision"]: line for line in read_emitted(capsys.readouterr().out).decisions()}
    poison, retry = decisions["PoisonMessage"], decisions["Retry"]
    assert (poison["step"], poison["message_id"], poison["reason"]) == ("tally", "m-0", "not a reading")
    assert (retry["step"], retry["message_id"], retry["reason"], retry["receive_count"]) == (
        "tally",
        "m-1",
        "ConnectionError",
        "4",
    )
