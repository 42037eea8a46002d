"""The stack outputs contract, read side: the key of each function's, queue's and DLQ's output by
its short name, as `infra/stacks` writes them (`infra.sizing.pascal`), and the queues the service
declares (the orders queue and one per `orders.workflow.CONSUMERS` entry). Every tool finds a
queue here, so a consumer added by the recipe is redriven and checked like the others."""

from __future__ import annotations

from orders.workflow import CONSUMERS

INGEST_QUEUE = "orders"  # the API's queue to the worker (infra.sizing.QUEUE_CONSUMERS)
QUEUES: tuple[str, ...] = (INGEST_QUEUE, *(consumer.name for consumer in CONSUMERS))


def pascal(name: str) -> str:
    """`reserve-inventory` -> `ReserveInventory` (infra.sizing.pascal: a test holds them equal)."""
    return "".join(part.capitalize() for part in name.split("-"))


def function_output(function: str) -> str:
    """`charge-payment` -> `ChargePaymentFunctionName`."""
    return f"{pascal(function)}FunctionName"


def queue_output(queue: str) -> str:
    """`notify` -> `NotifyQueueUrl`."""
    return f"{pascal(queue)}QueueUrl"


def dlq_output(queue: str) -> str:
    """`notify` -> `NotifyDlqUrl`: the dead-letter queue of that queue."""
    return f"{pascal(queue)}DlqUrl"
