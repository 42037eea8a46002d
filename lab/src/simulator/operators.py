"""What an operator does to the simulated cloud, through the code the ops tools run, on clients
built as the tools build theirs (`ops.target.CLIENT_CONFIG`) by the cloud (`operator_client`), so
a fault injected at a client reaches the tools' calls too.

- `rerun`: run N+1 of a FAILED entity (`ops.rerun.reruns` -> `reliability.workflow_runs.Reruns`);
- `redrive`: a failed execution again (`ops.redrive.redrive_execution`), resumed at its failed
  state (simulator.redrive); later than the redrive window after it ended, Step Functions refuses
  it (`ExecutionNotRedrivable`, simulator.patches) and ops.redrive restarts it under the same token
  while its fences surely live, else reports it REFUSED;
- `redrive_dlq`: a DLQ back to its source queue (`ops.redrive.redrive_dlq`);
- `StopDuring`: `StopExecution` of the execution whose task invokes a function, while that
  invocation runs (before its handler starts, or after it returned and before Step Functions
  sees the result): the invocation's effects land, the execution ends ABORTED.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ops.redrive import DlqRedrive, WorkflowRedrive, redrive_dlq, redrive_execution
from ops.rerun import reruns
from ops.target import Target
from reliability.run_store import RunRecord

WHEN = ("before", "after")
ClientFactory = Callable[[str], Any]


@dataclass(frozen=True)
class ToolTarget(Target):
    """The cloud as an operator tool's `Target`, whose clients the simulator builds."""

    clients: ClientFactory | None = None

    def client(self, service_name: str) -> Any:
        return self.clients(service_name) if self.clients is not None else super().client(service_name)


def rerun(
    outputs: dict[str, str], region: str, entity_id: str, *, clients: ClientFactory | None = None
) -> RunRecord:
    """Start run N+1 of `entity_id` as `python -m ops.rerun` does (same code, this cloud's outputs);
    the entity's record after the transition."""
    target = ToolTarget(endpoint_url=None, region=region, outputs=outputs, clients=clients)
    return reruns(target).start_next_run(entity_id)


def redrive(sfn: Any, execution_arn: str, *, now: float) -> WorkflowRedrive:
    return redrive_execution(sfn, execution_arn=execution_arn, now=now)


def redrive_queue(sqs: Any, dlq_url: str) -> DlqRedrive:
    return redrive_dlq(sqs, dlq_url=dlq_url)


@dataclass
class StopDuring:
    """A one-shot `StopExecution` of the execution whose task invokes `function` (a physical name),
    at `when` ("before" the handler runs, or "after" it returned)."""

    function: str
    when: str = "before"
    stopped: list[str] = field(default_factory=list)  # the execution ARNs it stopped

    def __post_init__(self) -> None:
        if self.when not in WHEN:
            raise ValueError(f"when must be one of {WHEN}, not {self.when!r}")

    def fire(self, sfn: Any, state_machine_arn: str, event: Any) -> None:
        """Stop the running execution whose input carries this task's token."""
        token = event.get("token") if isinstance(event, dict) else None
        for page in sfn.get_paginator("list_executions").paginate(
            stateMachineArn=state_machine_arn, statusFilter="RUNNING"
        ):
            for execution in page["executions"]:
                described = sfn.describe_execution(executionArn=execution["executionArn"])
                if json.loads(described["input"]).get("token") == token:
                    sfn.stop_execution(
                        executionArn=execution["executionArn"],
                        error="OperatorStop",
                        cause=f"stopped while {self.function} ran",
                    )
                    self.stopped.append(execution["executionArn"])
                    return
