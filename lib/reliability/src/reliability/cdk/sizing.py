"""Every Lambda function of a service: handler, timeout and memory, derived from its declaration.

Three functions every service has (its API, the worker that starts the workflow, the sweeper of
stranded runs), one per step and one per consumer. The handlers follow one convention: the
service's handler package holds a module per kind (`api`, `worker`, `sweep`, `steps`,
`consumers`), each with a `handler`; a step's and a consumer's function runs the shared handler of
its kind, told which entry it is by its environment. Pure Python (no aws_cdk).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reliability.cdk.capacity import worker_timeout_seconds
from reliability.cdk.config import WorkflowType
from reliability.cdk.declared import step_function
from reliability.declaration import Service

API = "api"
WORKER = "worker"
SWEEPER = "sweep-accepted"
# The functions a service has besides its steps and consumers (no step or consumer may take them).
OWN_FUNCTIONS = (API, WORKER, SWEEPER)

_STEP_MEMORY = 256
_CONSUMER_MEMORY = 256


@dataclass(frozen=True, kw_only=True)
class FunctionSizing:
    handler: str
    timeout_seconds: int
    memory_mb: int
    description: str


def plural(service: Service) -> str:
    """The entity's name in the plural, as descriptions and alarm names say it (`transfers`)."""
    return f"{service.entity.name}s"


def functions_of(
    service: Service, handler_package: str, workflow: WorkflowType = WorkflowType.STANDARD
) -> dict[str, FunctionSizing]:
    """Every function of a stage with this workflow type, by name: on Express the worker waits for
    each execution (StartSyncExecution), so its timeout outlasts the execution's
    (reliability.cdk.capacity.worker_timeout_seconds), and its queue's visibility follows. A
    step's timeout is also its fence lease: a second invocation may take the fence over only after
    the first can no longer run."""
    own = {
        # API Gateway gives up after 29 s; answer well before that.
        API: FunctionSizing(
            handler=f"{handler_package}.api.handler",
            timeout_seconds=10,
            memory_mb=512,
            description=" and ".join(route.name for route in service.routes) + ": HTTP idempotency, enqueue",
        ),
        # Its calls only; on an Express stage it also waits for the execution.
        WORKER: FunctionSizing(
            handler=f"{handler_package}.worker.handler",
            timeout_seconds=worker_timeout_seconds(workflow),
            memory_mb=256,
            description=f"{service.queue.capitalize()} queue consumer: starts one workflow execution "
            f"per {service.entity.name} run",
        ),
        # Scans the entity's table and re-sends a few messages; a minute is ample.
        SWEEPER: FunctionSizing(
            handler=f"{handler_package}.sweep.handler",
            timeout_seconds=60,
            memory_mb=256,
            description=f"Scheduled: re-send the message of {plural(service)} ACCEPTED too long (stranded)",
        ),
    }
    steps = {
        step_function(step): FunctionSizing(
            handler=f"{handler_package}.steps.handler",
            timeout_seconds=step.timeout_seconds,
            memory_mb=_STEP_MEMORY,
            description=step.description,
        )
        for step in service.steps
    }
    consumers = {
        consumer.name: FunctionSizing(
            handler=f"{handler_package}.consumers.handler",
            timeout_seconds=consumer.timeout_seconds,
            memory_mb=_CONSUMER_MEMORY,
            description=consumer.description,
        )
        for consumer in service.consumers
    }
    return {**own, **steps, **consumers}


def with_workflow(functions: dict[str, FunctionSizing], workflow: WorkflowType) -> dict[str, FunctionSizing]:
    """`functions` with the worker's timeout of this workflow type."""
    worker = replace(functions[WORKER], timeout_seconds=worker_timeout_seconds(workflow))
    return {**functions, WORKER: worker}


def queue_consumers(service: Service) -> dict[str, str]:
    """Which function consumes which queue (its visibility timeout follows that function's)."""
    return {service.queue: WORKER, **{c.name: c.name for c in service.consumers}}
