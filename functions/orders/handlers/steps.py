"""The saga's step functions: one Lambda per step of `orders.workflow.STEPS`, all on this ONE
handler; the function's `STEP_NAME` (set by infra from the same entry) says which step it runs.

Each invocation claims its step fence first (inside `orders.saga.run_step`); the fence lease of a
leased step is the invocation's remaining time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orders.config import StepSettings
from orders.handlers import init_done
from orders.observability import logger, tracer
from orders.runtime import current
from orders.saga import SAGA_NAMESPACE, StepRequest, run_step, steps
from reliability.telemetry import metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.utilities.typing import LambdaContext

SETTINGS = StepSettings
# Every invocation runs a declared step: resolve their effects (orders.effects) at init, the cold
# start, rather than on the first invocation.
steps()


@logger.inject_lambda_context(correlation_id_path="token")
@metrics_per_invocation
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = current(SETTINGS)
    name = runtime.settings.step_name
    logger.append_keys(step=name, order_id=event.get("order_id"))
    request = StepRequest(
        state=event,
        attempt_id=context.aws_request_id,
        remaining_seconds=context.get_remaining_time_in_millis() / 1000,
    )
    return run_step(runtime.saga, runtime.fences(SAGA_NAMESPACE), name, request)


init_done()  # the end of init (orders.handlers)
