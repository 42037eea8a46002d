"""Every Lambda function of the service: handler, timeout and memory, written once.

Both stacks read this: the app stack creates the functions, and the data stack derives each
queue's visibility timeout from the timeout of the function that consumes it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aws_cdk import Duration

from infra import manifest
from infra.capacity import worker_timeout_seconds
from infra.config import WorkflowType


@dataclass(frozen=True, kw_only=True)
class FunctionSizing:
    handler: str
    timeout_seconds: int
    memory_mb: int
    description: str

    @property
    def timeout(self) -> Duration:
        return Duration.seconds(self.timeout_seconds)


_STEP_MEMORY = 256
_CONSUMER_MEMORY = 256

# The functions written here; the steps' and consumers' come from their entries in
# functions/orders/workflow.py (infra/manifest.py), each with its own timeout (a step's is also its
# fence lease: a second invocation may take the fence over only after the first can no longer run).
_OWN_FUNCTIONS: dict[str, FunctionSizing] = {
    # API Gateway gives up after 29 s; answer well before that.
    "api": FunctionSizing(
        handler="orders.handlers.api.handler",
        timeout_seconds=10,
        memory_mb=512,
        description="POST /orders and GET /orders/{order_id}: HTTP idempotency, enqueue",
    ),
    # Its calls only; on an Express stage it also waits for the execution (`functions_for`).
    "worker": FunctionSizing(
        handler="orders.handlers.worker.handler",
        timeout_seconds=worker_timeout_seconds(WorkflowType.STANDARD),
        memory_mb=256,
        description="Orders queue consumer: starts one workflow execution per order run",
    ),
    # Scans the orders table and re-sends a few messages; a minute is ample.
    "sweep-accepted": FunctionSizing(
        handler="orders.handlers.sweep.handler",
        timeout_seconds=60,
        memory_mb=256,
        description="Scheduled: re-send the message of orders ACCEPTED too long (stranded)",
    ),
}

manifest.check(set(_OWN_FUNCTIONS))
STEP_FUNCTIONS: dict[str, FunctionSizing] = {
    manifest.step_function(step): FunctionSizing(
        handler=manifest.STEP_HANDLER,
        timeout_seconds=step.timeout_seconds,
        memory_mb=_STEP_MEMORY,
        description=step.description,
    )
    for step in manifest.steps()
}
CONSUMER_FUNCTIONS: dict[str, FunctionSizing] = {
    consumer.name: FunctionSizing(
        handler=manifest.CONSUMER_HANDLER,
        timeout_seconds=consumer.timeout_seconds,
        memory_mb=_CONSUMER_MEMORY,
        description=consumer.description,
    )
    for consumer in manifest.consumers()
}
FUNCTIONS: dict[str, FunctionSizing] = {**_OWN_FUNCTIONS, **STEP_FUNCTIONS, **CONSUMER_FUNCTIONS}


def functions_for(workflow: WorkflowType) -> dict[str, FunctionSizing]:
    """Every function of a stage with this workflow type: on Express the worker waits for each
    execution (StartSyncExecution), so its timeout outlasts the execution's
    (infra.capacity.worker_timeout_seconds), and the orders queue's visibility follows."""
    worker = replace(FUNCTIONS["worker"], timeout_seconds=worker_timeout_seconds(workflow))
    return {**FUNCTIONS, "worker": worker}


# Which function consumes which queue (visibility timeout = 6 x that function's timeout).
QUEUE_CONSUMERS: dict[str, str] = {"orders": "worker", **{c.name: c.name for c in manifest.consumers()}}


def pascal(name: str) -> str:
    """`reserve-inventory` -> `ReserveInventory` (construct ids, output keys, state names)."""
    return "".join(part.capitalize() for part in name.split("-"))
