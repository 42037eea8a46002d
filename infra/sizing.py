"""Every Lambda function of the service: handler, timeout and memory, written once.

Both stacks read this: the app stack creates the functions, and the data stack derives each
queue's visibility timeout from the timeout of the function that consumes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration


@dataclass(frozen=True, kw_only=True)
class FunctionSizing:
    handler: str
    timeout_seconds: int
    memory_mb: int
    description: str

    @property
    def timeout(self) -> Duration:
        return Duration.seconds(self.timeout_seconds)


# A step's timeout is also its fence lease: a second invocation may take the fence over only
# after the first one can no longer be running.
_STEP_TIMEOUT = 20
_STEP_MEMORY = 256

FUNCTIONS: dict[str, FunctionSizing] = {
    # API Gateway gives up after 29 s; answer well before that.
    "api": FunctionSizing(
        handler="orders.handlers.api.handler",
        timeout_seconds=10,
        memory_mb=512,
        description="POST /orders and GET /orders/{order_id}: HTTP idempotency, enqueue",
    ),
    "worker": FunctionSizing(
        handler="orders.handlers.worker.handler",
        timeout_seconds=30,
        memory_mb=256,
        description="Orders queue consumer: starts one workflow execution per order run",
    ),
    "reserve-inventory": FunctionSizing(
        handler="orders.handlers.steps.reserve_inventory",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Workflow step: reserve stock (fenced)",
    ),
    "charge-payment": FunctionSizing(
        handler="orders.handlers.steps.charge_payment",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Workflow step: charge the payment provider (fenced)",
    ),
    "record-ledger": FunctionSizing(
        handler="orders.handlers.steps.record_ledger",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Workflow step: write ledger entries (fenced)",
    ),
    "publish-events": FunctionSizing(
        handler="orders.handlers.steps.publish_events",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Workflow step: fan OrderCompleted out to the consumer queues (fenced)",
    ),
    "mark-completed": FunctionSizing(
        handler="orders.handlers.steps.mark_completed",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Workflow step: mark the order COMPLETED (fenced)",
    ),
    "release-inventory": FunctionSizing(
        handler="orders.handlers.steps.release_inventory",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Compensation: release reserved stock (fenced)",
    ),
    "mark-failed": FunctionSizing(
        handler="orders.handlers.steps.mark_failed",
        timeout_seconds=_STEP_TIMEOUT,
        memory_mb=_STEP_MEMORY,
        description="Compensation: mark the order FAILED (fenced)",
    ),
    "notify": FunctionSizing(
        handler="orders.handlers.consumers.notify",
        timeout_seconds=30,
        memory_mb=256,
        description="Notify queue consumer: sends one notification per event id",
    ),
    "analytics": FunctionSizing(
        handler="orders.handlers.consumers.analytics",
        timeout_seconds=30,
        memory_mb=256,
        description="Analytics queue consumer: counts each event id once in the daily aggregates",
    ),
    # Scans the orders table and re-sends a few messages; a minute is ample.
    "sweep-accepted": FunctionSizing(
        handler="orders.handlers.sweep.handler",
        timeout_seconds=60,
        memory_mb=256,
        description="Scheduled: re-send the message of orders ACCEPTED too long (stranded)",
    ),
}

# Which function consumes which queue (visibility timeout = 6 x that function's timeout).
QUEUE_CONSUMERS: dict[str, str] = {"orders": "worker", "notify": "notify", "analytics": "analytics"}


def pascal(name: str) -> str:
    """`reserve-inventory` -> `ReserveInventory` (construct ids, output keys, state names)."""
    return "".join(part.capitalize() for part in name.split("-"))
