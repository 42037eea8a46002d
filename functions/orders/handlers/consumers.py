"""The event consumers of `orders.workflow.CONSUMERS`: one Lambda per consumer, all on this ONE
handler; the function's `CONSUMER_NAME` (set by infra from the same entry) says which it is
(`reliability.queue_handlers.consumer_handler`)."""

from __future__ import annotations

# First, before anything that might load pydantic (this function's own model is plain,
# reliability.fields): Powertools' batch utility (reliability.batch) builds its own pydantic
# parser models when it finds pydantic already imported
# (aws_lambda_powertools/utilities/batch/types.py), which this function never uses.
from reliability.queue_handlers import consumer_handler

# isort: split
# Every event goes to the consumer (its effect and dedup); orders.runtime imports it only where it
# builds it, so this function imports it here, at init: its cold start.
import orders.consumers  # noqa: F401
from orders.config import ConsumerSettings
from orders.events import OrderCompletedEvent
from orders.handlers import init_done
from orders.runtime import current

SETTINGS = ConsumerSettings

handler = consumer_handler(runtime=lambda: current(SETTINGS), events=OrderCompletedEvent)


init_done()  # the end of init (orders.handlers)
