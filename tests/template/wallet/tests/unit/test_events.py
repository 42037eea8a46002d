"""The sample events in events/ are what the code reads: a step's input is a run, the consumer's
message carries a completed event, the POST body is within the contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wallet_api.contract import CreateTransferRequest
from wallet_api.domain import CompletedEvent, run_of

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _load(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


def test_the_step_input_is_a_run() -> None:
    run = run_of(_load("step-input.json"))
    assert run.entity_id == run.terms.entity_id


def test_the_audit_message_carries_a_completed_event() -> None:
    (record,) = _load("audit.json")["Records"]
    event = CompletedEvent.parse(json.loads(record["body"]))
    assert event.event_id == event.fact().id(stage="dev")


def test_the_create_request_is_within_the_contract() -> None:
    CreateTransferRequest.model_validate_json(_load("api-create.json")["body"])
