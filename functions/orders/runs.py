"""An order's runs: the library's run model (`reliability.workflow_runs`: `WorkflowStarter` for
the worker, `Reruns` for the operator and the `sweep-accepted` schedule) over orders. What the
sample adds is its workflow's input: the run's identity and the order's terms (`WorkflowInput`)."""

from __future__ import annotations

from typing import Any

from orders.domain import Order, WorkflowInput
from reliability.workflow_runs import Reruns as Reruns  # noqa: PLC0414 - re-export
from reliability.workflow_runs import WorkflowStarter as WorkflowStarter  # noqa: PLC0414 - re-export


def workflow_input(order: Order, run: int, token: str) -> dict[str, Any]:
    """The state machine's input for the order's run (`WorkflowInput`)."""
    return WorkflowInput(terms=order, run=run, token=token).as_dict()
