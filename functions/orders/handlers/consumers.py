"""The fan-out consumers of OrderCompleted: notify and analytics (each exactly once per event)."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from orders.handlers._sqs import sqs_handler
from orders.messages import OrderCompletedEvent
from orders.runtime import Runtime
from reliability.batch import parse_body


def _notify(runtime: Runtime, record: SQSRecord, _context: LambdaContext) -> None:
    runtime.event_consumers.notify(parse_body(record, OrderCompletedEvent))


def _count(runtime: Runtime, record: SQSRecord, _context: LambdaContext) -> None:
    runtime.event_consumers.count(parse_body(record, OrderCompletedEvent))


notify = sqs_handler(source="notify", dlq_setting="notify_dlq_url", record_handler=_notify)
analytics = sqs_handler(source="analytics", dlq_setting="analytics_dlq_url", record_handler=_count)
