"""Step Functions adapters: `Workflow` on a Standard state machine, `ExpressWorkflow` on an Express
one (reliability.workflow_runs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from reliability.errors import ExecutionConflict, error_code, transient_errors
from reliability.workflow_runs import ExecutionEnd


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:aws:states:r:a:stateMachine:m -> arn:aws:states:r:a:execution:m:name"""
    prefix, _, machine = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{machine}:{name}"


class StepFunctionsWorkflow:
    """Implements `Workflow` on a Standard state machine (execution names are unique for 90 days)."""

    def __init__(self, *, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def execution_arn(self, name: str) -> str:
        return execution_arn(self._arn, name)

    def start(self, *, name: str, payload: Mapping[str, Any]) -> str:
        try:
            with transient_errors("start execution"):
                response = self._client.start_execution(
                    stateMachineArn=self._arn, name=name, input=json.dumps(payload, sort_keys=True)
                )
            return str(response["executionArn"])
        except ClientError as error:
            if error_code(error) != "ExecutionAlreadyExists":
                raise
        # Someone started this name before: the same input is our own earlier start (success);
        # a different input can never succeed (poison).
        arn = self.execution_arn(name)
        with transient_errors("describe execution"):
            existing = self._client.describe_execution(executionArn=arn)
        if json.loads(existing.get("input") or "null") != dict(payload):
            raise ExecutionConflict(f"execution {name} exists with a different input")
        return arn


class ExpressStepFunctionsWorkflow:
    """Implements `ExpressWorkflow` on an Express state machine: StartSyncExecution returns when the
    execution ended (SUCCEEDED, FAILED or TIMED_OUT; a failure is an answer, not an error). Its
    client must wait as long as the execution may run and must not resend the start (a resend is
    a second execution): the composition root builds it so."""

    def __init__(self, *, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def run(self, *, name: str, payload: Mapping[str, Any]) -> ExecutionEnd:
        with transient_errors("start sync execution"):
            answer = self._client.start_sync_execution(
                stateMachineArn=self._arn, name=name, input=json.dumps(payload, sort_keys=True)
            )
        return ExecutionEnd(
            arn=str(answer["executionArn"]),
            status=str(answer["status"]),
            started=answer["startDate"].timestamp(),
            stopped=answer["stopDate"].timestamp(),
            error=answer.get("error"),
            cause=_readable(answer.get("cause")),
        )


def _readable(cause: str | None) -> str | None:
    """A failed Lambda task's cause is the function's error document (`{"errorType", "errorMessage",
    "stackTrace"}`): its message is what an operator reads (the DLQ reason, the log line)."""
    try:
        document = json.loads(cause) if cause else None
    except ValueError:
        return cause
    message = document.get("errorMessage") if isinstance(document, dict) else None
    return str(message) if message is not None else cause
