"""`sweep-accepted`, run on a schedule: re-send the message of every order stranded in ACCEPTED.

An order whose API invocation died between the order write and the queue send, and whose client
never retried, would stay ACCEPTED forever; the sweep is `Reruns.resend_stranded` (the same
re-send as `make rerun`), and each order re-sent is one `StrandedOrders` decision (log line with
the order's keys, and a count the dashboard alarms on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orders.config import SweepSettings
from orders.handlers import init_done
from orders.observability import logger, tracer
from orders.runs import Reruns
from orders.runtime import current
from orders.workflow import SERVICE
from reliability.telemetry import Decision, metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "SweepAccepted"
SETTINGS = SweepSettings


@logger.inject_lambda_context
@metrics_per_invocation
@tracer.capture_lambda_handler(capture_response=False)
def handler(_event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    runtime = current(SETTINGS)
    reruns = Reruns(entity=SERVICE.entity, store=runtime.orders, queue=runtime.queue(SERVICE.queue))
    stranded = reruns.resend_stranded(
        now=runtime.now(), bound_seconds=runtime.settings.stranded_after_seconds
    )
    for order in stranded:
        with runtime.telemetry.bind(order_id=order.order_id, run=order.run):
            runtime.telemetry.decision(Decision.STRANDED_ORDER, key=order.idempotency_key, step=STEP)
    return {"resent": [order.order_id for order in stranded]}


init_done()  # the end of init (orders.handlers)
