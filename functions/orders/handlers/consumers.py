"""The event consumers of `orders.workflow.CONSUMERS`: one Lambda per consumer, all on this ONE
handler; the function's `CONSUMER_NAME` (set by infra from the same entry) says which it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

# First, before anything that might load pydantic (this function's own model is plain,
# orders.fields): Powertools' batch utility (reliability.batch, through _sqs) builds its own
# pydantic parser models when it finds pydantic already imported
# (aws_lambda_powertools/utilities/batch/types.py), which this function never uses.
from orders.handlers._sqs import sqs_handler

# isort: split
# Every event goes to the consumer (its effect and dedup); orders.runtime imports it only where it
# builds it, so this function imports it here, at init: its cold start.
import orders.consumers  # noqa: F401
from orders.config import ConsumerSettings
from orders.events import OrderCompletedEvent
from orders.handlers import init_done
from reliability.batch import parse_body

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from orders.runtime import Runtime

SETTINGS = ConsumerSettings


def _apply(runtime: Runtime[ConsumerSettings], record: SQSRecord, _context: LambdaContext) -> None:
    runtime.event_consumer.apply(parse_body(record, OrderCompletedEvent))


handler = sqs_handler(settings=SETTINGS, record_handler=_apply)


init_done()  # the end of init (orders.handlers)
