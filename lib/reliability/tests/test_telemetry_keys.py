"""Keys in every signal: entity id, key hash, token, step, attempt and run in each decision's log
line and X-Ray annotations; each decision is fresh work or a replay (the dashboard's split)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics

from reliability import FenceStore, StepId
from reliability.keys import derive_key, execution_token
from reliability.telemetry import KEY_FIELDS, Decision, Kind, Telemetry, key_hash
from reliability_helpers import FENCES, FakeClock, read_emitted


class RecordingTracer:
    """Stands in for Powertools' Tracer in an active segment: keeps the annotations."""

    disabled = False

    def __init__(self) -> None:
        self.annotations: dict[str, Any] = {}

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value


def make(tracer: RecordingTracer | None = None) -> Telemetry:
    return Telemetry(
        logger=Logger(service=f"svc-{uuid.uuid4().hex}"),
        metrics=Metrics(namespace="retrysafe", service="svc"),
        tracer=tracer,  # type: ignore[arg-type]  # duck-typed stand-in
    )


def test_a_step_fence_decision_carries_every_key_in_the_log_line_and_the_trace(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a saga step's fence, keyed by the execution token of order o-1, run 2
    tracer = RecordingTracer()
    store = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=60,
        telemetry=make(tracer),
        namespace="saga",
        clock=FakeClock(),
        stage="dev",
    )
    token = execution_token(stage="dev", business_id="o-1", run=2)
    capsys.readouterr()
    # When an attempt claims it
    store.claim(StepId(token, "Pay"), attempt_id="req-9", lease_seconds=5)
    # Then the log line carries entity id, key hash, token, step, attempt and run
    (line,) = read_emitted(capsys.readouterr().out).decisions()
    stored = derive_key("saga", stage="dev", identity={"token": token, "step": "Pay"}).value
    expected = {
        "entity_id": "o-1",
        "key_hash": key_hash(stored),
        "token": token,
        "step": "Pay",
        "attempt": "req-9",
        "run": 2,
    }
    assert {k: line[k] for k in KEY_FIELDS} == expected
    # The stored key is not repeated: its step and token are the line's own (key_hash finds it)
    assert line["kind"] == "fresh"
    assert "key" not in line
    # And the trace segment is annotated with the same keys, so the trace is found by key hash
    assert tracer.annotations == {"decision": "FenceClaimed", **{k: str(v) for k, v in expected.items()}}


def test_a_consumer_event_id_names_its_entity_and_run() -> None:
    telemetry = make()
    event_id = derive_key("OrderCompleted", stage="dev", identity="o-7", run=3).value
    keys = telemetry.keys(key=None, token=event_id, step="announce", attempt=None)
    assert (keys["entity_id"], keys["run"]) == ("o-7", 3)


def test_keys_bound_for_an_invocation_reach_every_decision_inside_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    telemetry = make()
    http_key = derive_key("http", stage="dev", identity={"route": "POST /orders", "key": "k"}).value
    with telemetry.bind(entity_id="o-3", attempt="req-1"):
        telemetry.decision(Decision.EXECUTED, key=http_key, step="POST /orders")
    telemetry.decision(Decision.REPLAYED, key=http_key, step="POST /orders")
    inside, outside = read_emitted(capsys.readouterr().out).decisions()
    expected = ("o-3", "req-1", key_hash(http_key))
    assert (inside["entity_id"], inside["attempt"], inside["key_hash"]) == expected
    assert "entity_id" not in outside  # the binding ended with its block
    with pytest.raises(ValueError, match="not telemetry keys"), telemetry.bind(customer="c-1"):
        pass


def test_every_decision_is_fresh_work_or_a_replay_or_says_what_else_it_is() -> None:
    assert {d: d.kind for d in Decision if d.kind is Kind.REPLAYED} == {
        Decision.REPLAYED: Kind.REPLAYED,
        Decision.DEDUP_HIT: Kind.REPLAYED,
        Decision.FENCE_SKIPPED: Kind.REPLAYED,
    }
    assert {Decision.EXECUTED, Decision.DEDUP_MISS, Decision.FENCE_CLAIMED} <= {
        d for d in Decision if d.kind is Kind.FRESH
    }
