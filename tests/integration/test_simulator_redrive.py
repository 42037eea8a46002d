"""simulator.redrive: RedriveExecution resumes the execution where it ended, also one that ended
before entering any state (an operator's stop, or a kill, at once)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from simulator.redrive import failed_state, resume_at_failed_state

DEFINITION = {"StartAt": "ReserveInventory", "States": {"ReserveInventory": {"Type": "Succeed"}}}


class _Execution(SimpleNamespace):
    def to_history_output(self) -> dict[str, Any]:
        return {"events": self.events}

    def start(self) -> None:
        self.started = json.loads(self.state_machine.definition)["StartAt"]


def _execution(events: list[dict[str, Any]]) -> _Execution:
    machine = SimpleNamespace(definition=json.dumps(DEFINITION))
    return _Execution(
        events=events,
        state_machine=machine,
        input_data={"order_id": "o-1", "token": "t-1"},
        exec_worker=object(),
        stop_date=1,
        error="States.Aborted",
        cause=None,
        output=None,
        started=None,
    )


def test_an_execution_stopped_before_its_first_state_is_redriven_from_the_start() -> None:
    # Given an execution that ended before it entered any state
    execution = _execution(events=[{"type": "ExecutionStarted"}, {"type": "ExecutionAborted"}])
    assert failed_state(execution.events) is None

    # When it is redriven
    resume_at_failed_state(execution)

    # Then it runs from the workflow's first state with its own input, as the same execution
    assert execution.started == "ReserveInventory"
    assert execution.input_data == {"order_id": "o-1", "token": "t-1"}
    assert (execution.redrive_count, execution.error, execution.stop_date) == (1, None, None)


def test_an_execution_is_redriven_at_the_state_it_ended_in() -> None:
    entered = {"stateEnteredEventDetails": {"name": "ChargePayment", "input": '{"order_id": "o-1"}'}}
    execution = _execution(events=[{"type": "ExecutionStarted"}, entered, {"type": "ExecutionAborted"}])

    resume_at_failed_state(execution)

    assert execution.started == "ChargePayment"
    assert execution.input_data == {"order_id": "o-1"}
