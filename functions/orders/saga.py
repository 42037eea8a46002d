"""The orders saga: the sample's context (its ports) and how a step reads an order's run, on the
library's runner (`reliability.saga`: the step table from `orders.workflow.SERVICE`, the ONE
generic fenced runner, the step statuses, where a carried record lives).

Every step claims its fence (execution token, step name) before anything else, and reads nothing
else: the order's terms come in the workflow state (`WorkflowInput`), and the fence record is the
step's status (`step_statuses`, what `GET /orders/{id}` shows). The names below are the library's,
bound to this service, so the handlers, effects and tools import them from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from orders import workflow as declared
from orders.domain import OrderTerms, WorkflowInput
from orders.errors import UnknownOrder
from reliability.declaration import StepStatus
from reliability.effects import AtomicEffect as Effect
from reliability.saga import SAGA_NAMESPACE, AtomicStep, LeasedStep, Saga, WorkflowRun
from reliability.saga import StepRequest as _StepRequest

if TYPE_CHECKING:  # the ports are Protocols: annotations only, no module to load at run time
    from orders.ports import Inventory, Ledger, OrderStore, PaymentProvider, Queue
    from reliability.declaration import Service

__all__ = [
    "SAGA",
    "SAGA_NAMESPACE",
    "AtomicStep",
    "Effect",
    "LeasedStep",
    "SagaContext",
    "StepRequest",
    "StepStatus",
    "record_on",
    "run_step",
    "step_statuses",
    "steps",
]


def workflow_of(state: Mapping[str, Any]) -> WorkflowInput:
    """The order's run a workflow state carries; UnknownOrder when it is not one."""
    try:
        return WorkflowInput.from_state(state)
    except (KeyError, TypeError, ValueError) as error:
        raise UnknownOrder(f"step input is not a workflow input: {error!r}") from error


def _run_of(state: Mapping[str, Any]) -> WorkflowRun[OrderTerms]:
    workflow = workflow_of(state)
    return WorkflowRun(entity_id=workflow.order_id, token=workflow.token, terms=workflow.terms)


@dataclass(frozen=True)
class StepRequest(_StepRequest):
    """The library's request, bound to this service, with the order's run parsed."""

    service: Service | None = declared.SERVICE

    @property
    def workflow(self) -> WorkflowInput:
        return workflow_of(self.state)


@dataclass
class SagaContext:
    """Everything a step may touch; built once per cold start by `orders.runtime`."""

    stage: str
    clock: Callable[[], datetime]
    orders: OrderStore | None = (
        None  # only the steps that declare the orders table (MarkCompleted/MarkFailed)
    )
    inventory: Inventory | None = None
    payments: PaymentProvider | None = None
    ledger: Ledger | None = None
    # Every consumer's queue (`orders.workflow.CONSUMERS`), for a step whose port is EVENTS.
    event_queues: list[Queue] = field(default_factory=list)
    # How long the event consumers remember an event id: the "key lifetime" of PublishEvents.
    event_dedup_seconds: float | None = None
    # The physical names of this function's tables, by short name (where a carried record is).
    tables: Mapping[str, str] = field(default_factory=dict)

    def need(self, port: Any, name: str) -> Any:
        if port is None:
            raise RuntimeError(f"this function is not configured with {name}")
        return port


SAGA: Saga[SagaContext, OrderTerms] = Saga(
    declared.SERVICE,
    _run_of,
    tables=attrgetter("tables"),
    event_key_lifetime=attrgetter("event_dedup_seconds"),
)
steps = SAGA.steps
step_statuses = SAGA.step_statuses
record_on = SAGA.record_on
run_step = SAGA.run_step
