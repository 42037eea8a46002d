"""The saga's step functions: one Lambda per step of `orders.workflow.STEPS`, all on this ONE
handler; the function's `STEP_NAME` (set by infra from the same entry) says which step it runs
(`reliability.handlers.step_handler`: the step's fence claimed first, a leased step's lease the
invocation's remaining time)."""

from __future__ import annotations

from orders.config import StepSettings
from orders.handlers import init_done
from orders.runtime import current
from orders.saga import SAGA, StepRequest
from reliability.handlers import step_handler

SETTINGS = StepSettings

handler = step_handler(runtime=lambda: current(SETTINGS), saga=SAGA, request_type=StepRequest)


init_done()  # the end of init (orders.handlers)
