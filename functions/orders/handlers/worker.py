"""The orders-queue worker: one workflow execution per (order, run), the library's worker
(`reliability.queue_handlers.worker_handler`: throttled starts and failed Express runs kept on the
settings' backoff, the last receive of a failed run dead-lettered with its error)."""

from __future__ import annotations

# First, before anything that might load pydantic (this function's own model is plain,
# reliability.fields): Powertools' batch utility (reliability.batch) builds its own pydantic
# parser models when it finds pydantic already imported
# (aws_lambda_powertools/utilities/batch/types.py), which this function never uses.
from reliability.queue_handlers import worker_handler

# isort: split
# Every message goes to the workflow starter; orders.runtime imports it only where it builds it,
# so this function imports it here, at init: its cold start.
import orders.runs  # noqa: F401
from orders.config import WorkerSettings
from orders.handlers import init_done
from orders.messages import ORDER_MESSAGES
from orders.runtime import current

SETTINGS = WorkerSettings

handler = worker_handler(runtime=lambda: current(SETTINGS), messages=ORDER_MESSAGES)


init_done()  # the end of init (orders.handlers)
