"""The saga's step functions: one Lambda per step (DEVELOPERS.md), all made by ONE factory.

Each handler claims its step fence first (inside `orders.saga.run_step`); the fence lease of a
leased step is the invocation's remaining time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from orders.domain import StepName
from orders.observability import logger, tracer
from orders.runtime import current
from orders.saga import StepRequest, run_step
from reliability.telemetry import metrics_per_invocation

SAGA_NAMESPACE = "saga"

StepHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def step_handler(name: StepName) -> StepHandler:
    @logger.inject_lambda_context(correlation_id_path="token")
    @metrics_per_invocation
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        runtime = current()
        logger.append_keys(step=name.value, order_id=event.get("order_id"))
        request = StepRequest(
            state=event,
            attempt_id=context.aws_request_id,
            remaining_seconds=context.get_remaining_time_in_millis() / 1000,
        )
        return run_step(runtime.saga, runtime.fences(SAGA_NAMESPACE), name, request)

    handler.__name__ = handler.__qualname__ = name.value
    return handler


reserve_inventory = step_handler(StepName.RESERVE_INVENTORY)
charge_payment = step_handler(StepName.CHARGE_PAYMENT)
record_ledger = step_handler(StepName.RECORD_LEDGER)
publish_events = step_handler(StepName.PUBLISH_EVENTS)
mark_completed = step_handler(StepName.MARK_COMPLETED)
release_inventory = step_handler(StepName.RELEASE_INVENTORY)
mark_failed = step_handler(StepName.MARK_FAILED)
