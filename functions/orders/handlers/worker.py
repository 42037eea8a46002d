"""The orders-queue worker: one workflow execution per (order, run)."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from orders.handlers._sqs import remaining_seconds, sqs_handler
from orders.messages import OrderMessageModel
from orders.runtime import Runtime
from reliability.batch import parse_body


def _start(runtime: Runtime, record: SQSRecord, context: LambdaContext) -> None:
    runtime.workflow_starter.start_once(
        parse_body(record, OrderMessageModel),
        attempt_id=record.message_id,
        lease_seconds=remaining_seconds(context),
    )


handler = sqs_handler(source="worker", dlq_setting="orders_dlq_url", record_handler=_start)
