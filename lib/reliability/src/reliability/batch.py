"""SQS consumers: Powertools batch processing + per-record dedup on the fence mechanism.

- ``process_batch`` runs Powertools' ``BatchProcessor``/``process_partial_response``: a record
  whose handler raises is reported in ``batchItemFailures`` (SQS redelivers it; maxReceiveCount
  moves it to the DLQ); a record that succeeded is acknowledged.
- ``PoisonMessage(reason)`` (also raised by ``parse_body`` for an unparseable body or a wrong
  shape) makes the processor send the record to the DLQ itself, with message attributes
  ``reason`` and ``source``, and count it as handled: retrying it cannot help.
- ``parse_body`` takes any model with pydantic's ``model_validate`` (a pydantic model, or a plain
  class that validates by hand and raises ``ValueError``), and imports no pydantic itself: pydantic
  costs an SQS function ~75 ms of CPU on its cold start (bench/results/coldstart.notes.md), which a
  consumer with a plain model need not pay.
- ``ConsumerDedup`` (reliability.dedup) applies each event once; a queue-fed function that does not
  dedupe (the orders worker) loads none of the fence machinery.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from reliability.errors import PoisonMessage
from reliability.telemetry import Decision, Telemetry

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")
REASON_MAX = 256
EMPTY_BODY = "(empty body)"


@dataclass(frozen=True)
class DeadLetters:
    """The DLQ port: an SQS client and the queue URL; ``source`` names the consumer."""

    client: Any
    queue_url: str
    source: str

    def send(self, record: SQSRecord, reason: str) -> None:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=record.body or EMPTY_BODY,  # SQS refuses an empty body
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": reason[:REASON_MAX] or "poison"},
                "source": {"DataType": "String", "StringValue": self.source},
                "message_id": {"DataType": "String", "StringValue": record.message_id},
            },
        )


class BodyModel(Protocol[T_co]):
    """What ``parse_body`` parses into: pydantic's ``model_validate`` (a pydantic model class is
    one), raising ``ValueError`` for a wrong shape (pydantic's ``ValidationError`` is one)."""

    def model_validate(self, obj: Any, /) -> T_co: ...


def parse_body(record: SQSRecord, model: BodyModel[T]) -> T:
    """Parse a JSON body into ``model``; PoisonMessage when it is not JSON or has the wrong shape
    (the reason names the fields that failed and why)."""
    try:
        data = json.loads(record.body or "")
    except json.JSONDecodeError as error:
        raise PoisonMessage(f"unparseable body: {error.msg}") from error
    try:
        return model.model_validate(data)
    except ValueError as error:
        raise PoisonMessage(f"wrong shape: {_shape_problems(error)}") from error


def _shape_problems(error: ValueError) -> str:
    """Each field that failed with why, never the input (the body is in the DLQ beside it): from
    pydantic's error list, else the error's own text (a plain model words it so)."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error) or "body"
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'} ({e['msg']})"
        for e in errors(include_url=False, include_input=False)[:5]
    )


def process_batch(
    event: Mapping[str, Any],
    *,
    handler: Callable[[SQSRecord], Any],
    dead_letters: DeadLetters,
    telemetry: Telemetry,
    context: Any = None,
) -> dict[str, Any]:
    """Run ``handler`` on every record; return the ``batchItemFailures`` response."""
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def record_handler(record: SQSRecord) -> Any:
        try:
            return handler(record)
        except PoisonMessage as poison:
            dead_letters.send(record, poison.reason)
            telemetry.decision(
                Decision.POISON,
                step=dead_letters.source,
                message_id=record.message_id,
                reason=poison.reason,
            )
            return None
        except Exception as error:
            # Reported in batchItemFailures; SQS redelivers it. An expected event, so INFO.
            telemetry.retry(
                reason=type(error).__name__,
                step=dead_letters.source,
                message_id=record.message_id,
                receive_count=record.attributes.approximate_receive_count,
            )
            raise

    response = process_partial_response(
        event=dict(event), record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
