"""RedriveExecution on moto's Step Functions: the failed execution resumes at the state it failed in.

AWS's redrive keeps the execution (same name and ARN, `redriveCount` + 1) and runs it again from
the state that failed, with that state's input; the states that succeeded before are not run
again. moto has no redrive, so this emulates it from the execution's history: the last state it
entered, and the input it entered with, become the start of the same execution object. A leased
step redriven days later therefore runs again under the same token, as on AWS (its fence may have
expired by then: that is what the TTL guard is about). Unlike AWS, the history restarts with the
redrive instead of being appended to.
"""

from __future__ import annotations

import copy
import json
from typing import Any


def failed_state(events: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(the state the execution was in when it ended, that state's input), from its history; None
    when it ended before entering any (stopped at once): then nothing succeeded, and it resumes
    where it would have begun."""
    for event in reversed(events):
        details = event.get("stateEnteredEventDetails")
        if details is not None:
            return str(details["name"]), str(details.get("input", "{}"))
    return None


def resume_at_failed_state(execution: Any) -> None:
    """Run moto's (parser) `execution` again from its failed state, as the same execution."""
    machine = copy.copy(execution.state_machine)  # this execution's snapshot; the deployed one stays
    definition = json.loads(machine.definition)
    failed = failed_state(execution.to_history_output()["events"])
    state, state_input = failed or (definition["StartAt"], json.dumps(execution.input_data or {}))
    definition["StartAt"] = state
    machine.definition = json.dumps(definition)
    execution.state_machine = machine
    execution.input_data = json.loads(state_input)
    execution.exec_worker = None
    execution.stop_date = execution.error = execution.cause = execution.output = None
    execution.redrive_count = getattr(execution, "redrive_count", 0) + 1
    execution.start()
