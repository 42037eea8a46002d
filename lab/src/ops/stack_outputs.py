"""The stack outputs contract, read side: the key of each function's, queue's and DLQ's output by
its short name, as `reliability.cdk` writes them (`infra.sizing.pascal`). The queues are the
service's declaration's (`Service.queues`: the API's queue and one per consumer), so a consumer
added by the recipe is redriven and checked like the others."""

from __future__ import annotations

from collections.abc import Mapping

from reliability.declaration import FENCES, Service


def pascal(name: str) -> str:
    """`hold-seat` -> `HoldSeat` (infra.sizing.pascal: a test holds them equal)."""
    return "".join(part.capitalize() for part in name.split("-"))


def function_output(function: str) -> str:
    """`hold-seat` -> `HoldSeatFunctionName`."""
    return f"{pascal(function)}FunctionName"


def queue_output(queue: str) -> str:
    """`send-ticket` -> `SendTicketQueueUrl`."""
    return f"{pascal(queue)}QueueUrl"


def dlq_output(queue: str) -> str:
    """`send-ticket` -> `SendTicketDlqUrl`: the dead-letter queue of that queue."""
    return f"{pascal(queue)}DlqUrl"


def table_output(table: str) -> str:
    """A table's stack output by its short name (`bookings` -> `BookingsTableName`, `fences` ->
    `FenceTableName`; reliability/cdk/data_stack.py)."""
    return "FenceTableName" if table == FENCES else f"{table.capitalize()}TableName"


# The library's own table beside the service's (the HTTP idempotency records, reliability.http).
IDEMPOTENCY_TABLE_OUTPUT = "IdempotencyTableName"


def data_stack_outputs(declared: Service) -> frozenset[str]:
    """Every output the data stack writes for a declared service (reliability/cdk/data_stack.py): the
    idempotency and fence tables, each declared table, each declared queue and its DLQ. The ops
    tools, the local cloud and e2e read these keys."""
    return frozenset(
        {
            IDEMPOTENCY_TABLE_OUTPUT,
            *(table_output(table) for table in (*declared.tables, FENCES)),
            *(output(queue) for queue in declared.queues for output in (queue_output, dlq_output)),
        }
    )


def table_names(declared: Service, outputs: Mapping[str, str]) -> dict[str, str]:
    """The physical name of each declared table found in the outputs (and the fence table's)."""
    return {
        table: outputs[table_output(table)]
        for table in (*sorted(declared.tables), FENCES)
        if table_output(table) in outputs
    }
