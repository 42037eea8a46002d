"""What each function of a service may touch, derived from its declaration: the tables it reads
and writes, the queues it sends to, the queue that triggers it. The grants and the environment
variables that name each resource follow from this and nothing else. Pure Python (no aws_cdk)."""

from __future__ import annotations

from dataclasses import dataclass

from reliability.cdk.declared import IDEMPOTENCY, step_function
from reliability.cdk.sizing import API, SWEEPER, WORKER
from reliability.declaration import FENCES, Consumer, Service, Step


@dataclass(frozen=True, kw_only=True)
class Access:
    """The data a function may touch: tables read/write, tables read-only, queues it sends to."""

    read_write: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    send: tuple[str, ...] = ()
    consume: str | None = None  # the queue that triggers it


def _step_access(service: Service, step: Step) -> Access:
    """A fenced step writes the fence table and its ports: tables (the entity's table only for a
    step that declares it), or every consumer's queue for the events port."""
    tables = tuple(p for p in step.ports if p != service.events)
    sends = tuple(c.name for c in service.consumers) if service.events in step.ports else ()
    return Access(read_write=(FENCES, *tables), send=sends)


def _consumer_access(service: Service, consumer: Consumer) -> Access:
    """Its dedup table and its tables; the entity's table read-only, to verify each event against
    its entity, unless the consumer writes it."""
    entity = service.entity.table
    return Access(
        read_write=(IDEMPOTENCY, *consumer.tables),
        read=() if entity in consumer.tables else (entity,),
        send=(f"{consumer.name}-dlq",),
        consume=consumer.name,
    )


def access_of(service: Service) -> dict[str, Access]:
    """Every function's access, by function name."""
    entity = service.entity.table
    # A GET of the entity reads each step's record wherever the step keeps it: any step table.
    step_tables = dict.fromkeys(
        port for step in service.steps for port in step.ports if port not in (service.events, entity)
    )
    return {
        API: Access(read_write=(IDEMPOTENCY, entity), read=(*step_tables, FENCES), send=(service.queue,)),
        # The worker's one dedup is the execution name: no idempotency table.
        WORKER: Access(read_write=(entity,), send=(f"{service.queue}-dlq",), consume=service.queue),
        **{step_function(step): _step_access(service, step) for step in service.steps},
        **{consumer.name: _consumer_access(service, consumer) for consumer in service.consumers},
        SWEEPER: Access(read=(entity,), send=(service.queue,)),
    }
