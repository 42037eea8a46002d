"""Where a decision's keys come from (the call, the invocation's binding, the token, the key), what
its log line keeps of the caller's fields and of the key, and the step its metric is counted under."""

from __future__ import annotations

import uuid

import pytest
from aws_lambda_powertools import Logger, Metrics

from reliability.keys import derive_key, execution_token
from reliability.telemetry import Decision, Telemetry, key_hash
from reliability_helpers import read_emitted

TOKEN = execution_token(stage="dev", business_id="o-1", run=2)
EVENT_ID = derive_key("OrderCompleted", stage="dev", identity="o-7", run=3).value


def make() -> Telemetry:
    return Telemetry(
        logger=Logger(service=f"svc-{uuid.uuid4().hex}"),
        metrics=Metrics(namespace="retrysafe", service="svc"),
    )


# --- keys --------------------------------------------------------------------------------------


def test_every_key_can_come_from_the_invocations_binding() -> None:
    telemetry = make()
    bound = {
        "token": TOKEN,
        "key_hash": "h-1",
        "step": "Pay",
        "attempt": "req-1",
        "run": 5,
        "entity_id": "o-9",
    }
    with telemetry.bind(**bound):
        keys = telemetry.keys(key=None, token=None, step=None, attempt=None)
    assert keys == bound


def test_a_bound_token_names_the_entity_and_run() -> None:
    telemetry = make()
    with telemetry.bind(token=TOKEN):
        keys = telemetry.keys(key=None, token=None, step="Pay", attempt=None)
    assert keys == {
        "entity_id": "o-1",
        "key_hash": None,
        "token": TOKEN,
        "step": "Pay",
        "attempt": None,
        "run": 2,
    }


def test_the_call_wins_over_the_binding() -> None:
    telemetry = make()
    with telemetry.bind(token="dev.o-5.r9", key_hash="bound", step="Bound", attempt="bound"):
        keys = telemetry.keys(key=EVENT_ID, token=TOKEN, step="Pay", attempt="req-2")
    assert keys == {
        "entity_id": "o-1",
        "key_hash": key_hash(EVENT_ID),
        "token": TOKEN,
        "step": "Pay",
        "attempt": "req-2",
        "run": 2,
    }


def test_the_bound_entity_and_run_win_over_the_tokens() -> None:
    telemetry = make()
    with telemetry.bind(entity_id="o-9", run=7):
        keys = telemetry.keys(key=None, token=TOKEN, step=None, attempt=None)
    assert (keys["entity_id"], keys["run"]) == ("o-9", 7)


def test_the_token_names_the_entity_over_the_key() -> None:
    keys = make().keys(key=EVENT_ID, token=TOKEN, step=None, attempt=None)
    assert (keys["entity_id"], keys["run"]) == ("o-1", 2)


def test_without_a_token_the_key_names_the_entity() -> None:
    keys = make().keys(key=EVENT_ID, token=None, step=None, attempt=None)
    assert keys == {
        "entity_id": "o-7",
        "key_hash": key_hash(EVENT_ID),
        "token": None,
        "step": None,
        "attempt": None,
        "run": 3,
    }


def test_nothing_said_is_none() -> None:
    keys = make().keys(key=None, token=None, step=None, attempt=None)
    assert keys == dict.fromkeys(("entity_id", "key_hash", "token", "step", "attempt", "run"))


# --- the line ----------------------------------------------------------------------------------


def test_a_line_with_a_key_drops_only_the_spelled_fields_the_key_spells(
    capsys: pytest.CaptureFixture[str],
) -> None:
    telemetry = make()
    key = 'saga#dev#r1#v:{"step":"Pay","token":"dev.o-1.r1"}'
    # When a decision with the key carries a spelled field the key spells, one it does not, and
    # a field of another name whose value the key happens to contain
    telemetry.decision(Decision.FENCE_SKIPPED, key=key, namespace="saga", label="other", reason="Pay")
    [line] = read_emitted(capsys.readouterr().out).decisions()
    # Then only the first is left out
    assert "namespace" not in line
    assert (line["label"], line["reason"], line["key"]) == ("other", "Pay", key)


@pytest.mark.parametrize(
    ("key", "step", "token"),
    [
        ('saga#dev#r1#v:{"step":null,"token":"dev.o-1.r1"}', None, "dev.o-1.r1"),
        ('saga#dev#r1#v:{"step":"Pay","token":null}', "Pay", None),
    ],
)
def test_a_key_is_left_out_only_when_the_lines_step_and_token_spell_it(
    capsys: pytest.CaptureFixture[str], key: str, step: str | None, token: str | None
) -> None:
    make().decision(Decision.FENCE_SKIPPED, key=key, step=step, token=token)
    [line] = read_emitted(capsys.readouterr().out).decisions()
    assert line["key"] == key


def test_a_retry_line_keeps_the_callers_fields(capsys: pytest.CaptureFixture[str]) -> None:
    make().retry(reason="ThrottlingException", step="Pay", attempt_number=3)
    [line] = read_emitted(capsys.readouterr().out).decisions()
    assert (line["decision"], line["reason"], line["step"], line["attempt_number"]) == (
        "Retry",
        "ThrottlingException",
        "Pay",
        3,
    )


def test_a_line_keeps_a_correlation_id_that_is_not_its_token(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a logger correlated by something else than the step's token (an API request's id)
    telemetry = make()
    telemetry.logger.set_correlation_id("req-abc")
    # When a decision with a token is logged, Then its line keeps the correlation id
    telemetry.decision(Decision.FENCE_SKIPPED, token=TOKEN, step="Pay")
    [line] = read_emitted(capsys.readouterr().out).decisions()
    assert (line["correlation_id"], line["token"]) == ("req-abc", TOKEN)


# --- the metric --------------------------------------------------------------------------------


def test_a_decision_without_a_step_is_counted_under_step_dash(capsys: pytest.CaptureFixture[str]) -> None:
    make().decision(Decision.STRANDED_RUN, token=TOKEN)
    emitted = read_emitted(capsys.readouterr().out)
    assert emitted.dimensions_of("StrandedRun") == [{"service": "svc", "step": "-"}]
    # And the metric is a count
    [document] = emitted.metrics
    assert document["_aws"]["CloudWatchMetrics"][0]["Metrics"] == [{"Name": "StrandedRun", "Unit": "Count"}]
    assert document["StrandedRun"] == [1.0]
