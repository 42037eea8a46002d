"""Every decision is counted in an EMF metric with service and step dimensions (one document per
invocation inside a handler) and, unless routine, logged as one structured INFO line."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics

from reliability import AtomicEffect, FenceStore, StepId
from reliability.errors import FenceBusy, StaleFence
from reliability.telemetry import Decision, Telemetry, metrics_per_invocation
from reliability_demo import DemoPaymentDeclined
from reliability_helpers import FENCES, FakeClock, read_emitted


def make_telemetry() -> Telemetry:
    # Built inside the test, with a fresh logger name, so the Logger writes to this test's stdout
    # (Powertools keeps the first stream of a logger name for the process).
    return Telemetry(
        logger=Logger(service=f"orders-svc-{uuid.uuid4().hex}"),
        metrics=Metrics(namespace="retrysafe", service="orders-svc"),
    )


def test_a_decision_logs_structured_fields_and_emits_a_dimensioned_metric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given telemetry
    telemetry = make_telemetry()
    # When a decision is recorded
    telemetry.decision(Decision.FENCE_SKIPPED, key="k", token="t", step="pay", attempt="req-1")
    # Then one INFO log line carries key, token, step, attempt, outcome
    emitted = read_emitted(capsys.readouterr().out)
    [line] = emitted.decisions()
    assert line["level"] == "INFO"
    assert {k: line[k] for k in ("decision", "key", "token", "step", "attempt")} == {
        "decision": "FenceSkipped",
        "key": "k",
        "token": "t",
        "step": "pay",
        "attempt": "req-1",
    }
    # And one EMF metric with service and step as dimensions, in the service's namespace
    assert emitted.metric_names() == ["FenceSkipped"]
    assert emitted.dimensions_of("FenceSkipped") == [{"service": "orders-svc", "step": "pay"}]
    assert emitted.metrics[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "retrysafe"


def test_a_retry_is_an_info_event_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = make_telemetry()
    telemetry.retry(reason="ThrottlingException", step="hold-items")
    emitted = read_emitted(capsys.readouterr().out)
    assert [line["level"] for line in emitted.logs] == ["INFO"]
    assert emitted.logs[0]["reason"] == "ThrottlingException"
    assert emitted.metric_names() == ["Retry"]


def test_every_fence_decision_is_emitted(ddb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a fence store and a sequence that walks every fence decision
    clock = FakeClock()
    store = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=60,
        telemetry=make_telemetry(),
        namespace="fence",
        clock=clock,
    )
    step = StepId("dev.o.r1", "pay")
    capsys.readouterr()
    store.claim(step, attempt_id="A", lease_seconds=5)  # claimed
    with pytest.raises(FenceBusy):
        store.claim(step, attempt_id="B", lease_seconds=5)  # busy
    clock.advance(6)
    store.claim(step, attempt_id="B", lease_seconds=5)  # takeover
    with pytest.raises(StaleFence):
        store.complete(step, fencing_token=1, result={})  # stale
    store.release(step, fencing_token=2)  # released

    def fail(key: str) -> dict[str, Any]:
        raise DemoPaymentDeclined("no")

    with pytest.raises(DemoPaymentDeclined):
        store.run_leased(step, attempt_id="C", lease_seconds=5, effect=fail)  # takeover + failed
    other = StepId("dev.o.r1", "record-entry")
    store.run_atomic(other, lambda: AtomicEffect({"ok": 1}))  # completed
    store.run_atomic(other, lambda: AtomicEffect({"ok": 1}))  # skipped

    def boom(key: str) -> dict[str, Any]:
        raise RuntimeError("transient")

    with pytest.raises(RuntimeError):
        store.run_leased(StepId("dev.o.r1", "publish"), attempt_id="D", lease_seconds=5, effect=boom)  # retry
    # Then each decision produced its metric with the step as a dimension
    emitted = read_emitted(capsys.readouterr().out)
    names = set(emitted.metric_names())
    assert {
        "FenceClaimed",
        "FenceBusy",
        "FenceTakeover",
        "FenceStale",
        "FenceReleased",
        "FenceFailed",
        "FenceCompleted",
        "FenceSkipped",
        "Retry",
    } <= names
    assert {"service": "orders-svc", "step": "pay"} in emitted.dimensions_of("FenceBusy")
    assert all(line["level"] == "INFO" for line in emitted.logs)


def test_metrics_without_a_namespace_fall_back_to_the_service(capsys: pytest.CaptureFixture[str]) -> None:
    # Given Metrics built without a namespace (POWERTOOLS_METRICS_NAMESPACE unset)
    telemetry = Telemetry(
        logger=Logger(service=f"x-{uuid.uuid4().hex}"), metrics=Metrics(service="orders-svc")
    )
    # When a decision is recorded, Then the metric still goes out, in the service's namespace
    telemetry.decision(Decision.DEDUP_HIT, step="announce")
    emitted = read_emitted(capsys.readouterr().out)
    assert emitted.metrics[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "orders-svc"


def test_inside_a_handler_the_decisions_go_out_as_one_metric_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a handler wrapped for one metric document per invocation
    telemetry = make_telemetry()

    @metrics_per_invocation
    def handler(_event: Any, _context: Any) -> str:
        telemetry.decision(Decision.FENCE_CLAIMED, token="dev.o-1.r1", step="Pay")
        telemetry.decision(Decision.FENCE_COMPLETED, token="dev.o-1.r1", step="Pay")
        telemetry.retry(reason="ThrottlingException", step="Pay")
        telemetry.retry(reason="ThrottlingException", step="Pay")
        assert read_emitted(capsys.readouterr().out).metrics == []  # nothing before the end
        return "ok"

    # When it runs
    assert handler({}, None) == "ok"
    # Then one EMF document carries every count, with the service and step dimensions
    [document] = read_emitted(capsys.readouterr().out).metrics
    assert {name: document[name] for name in ("FenceClaimed", "FenceCompleted", "Retry")} == {
        "FenceClaimed": [1.0],
        "FenceCompleted": [1.0],
        "Retry": [2.0],
    }
    assert {document["service"], document["step"]} == {"orders-svc", "Pay"}


def test_an_attempt_logs_its_first_routine_decision_and_every_unusual_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    telemetry = make_telemetry()

    @metrics_per_invocation
    def leased_step(_event: Any, _context: Any) -> None:
        telemetry.decision(Decision.FENCE_CLAIMED, token="dev.o-1.r1", step="Pay")  # line
        telemetry.decision(Decision.FENCE_COMPLETED, token="dev.o-1.r1", step="Pay")  # count
        telemetry.decision(Decision.FENCE_COMPLETED, token="dev.o-1.r1", step="RecordEntry")  # line
        telemetry.decision(Decision.FENCE_SKIPPED, token="dev.o-1.r1", step="Pay")  # line

    leased_step({}, None)
    lines = [(line["decision"], line["step"]) for line in read_emitted(capsys.readouterr().out).decisions()]
    assert lines == [
        ("FenceClaimed", "Pay"),
        ("FenceCompleted", "RecordEntry"),
        ("FenceSkipped", "Pay"),
    ]


def test_a_consumer_dedup_attempt_is_one_line_its_own_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = make_telemetry()

    @metrics_per_invocation
    def consumer(_event: Any, _context: Any) -> None:
        with telemetry.summarised():
            telemetry.decision(Decision.FENCE_CLAIMED, token="dev.o-1.r1.completed", step="announce")
            telemetry.decision(Decision.FENCE_COMPLETED, token="dev.o-1.r1.completed", step="announce")
        telemetry.decision(Decision.DEDUP_MISS, token="dev.o-1.r1.completed", step="announce")

    consumer({}, None)
    emitted = read_emitted(capsys.readouterr().out)
    assert [line["decision"] for line in emitted.decisions()] == ["DedupMiss"]
    assert sorted(emitted.metric_names()) == ["DedupMiss", "FenceClaimed", "FenceCompleted"]


def test_a_line_with_the_key_does_not_repeat_what_the_key_spells(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = make_telemetry()
    key = 'saga#dev#r1#v:{"step":"Pay","token":"dev.o-1.r1"}'
    label = '{"step":"Pay","token":"dev.o-1.r1"}'
    telemetry.decision(Decision.FENCE_SKIPPED, key=key, step="Pay", label=label, namespace="saga")
    telemetry.decision(Decision.FENCE_SKIPPED, step="Pay", label=label, namespace="saga")
    with_key, without_key = read_emitted(capsys.readouterr().out).decisions()
    assert with_key["key"] == key
    assert "label" not in with_key
    assert "namespace" not in with_key
    assert (without_key["label"], without_key["namespace"]) == (label, "saga")


def test_a_step_decision_line_does_not_repeat_what_the_invocation_and_its_keys_say(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a step handler whose correlation id is its token (as orders.handlers.steps sets it)
    telemetry = make_telemetry()
    context = type(
        "Context",
        (),
        {
            "function_name": "fn",
            "memory_limit_in_mb": 256,
            "invoked_function_arn": "arn:aws:lambda:us-east-1:123456789012:function:fn",
            "aws_request_id": "req-1",
        },
    )()

    @telemetry.logger.inject_lambda_context(correlation_id_path="token")
    def step(_event: Any, _context: Any) -> None:
        telemetry.decision(
            Decision.FENCE_SKIPPED,
            key='saga#dev#r1#v:{"step":"Pay","token":"dev.o-1.r1"}',
            token="dev.o-1.r1",
            step="Pay",
        )

    # When it decides
    step({"token": "dev.o-1.r1"}, context)
    # Then its line names the function, the request, the decision and its keys, once each
    [line] = read_emitted(capsys.readouterr().out).decisions()
    named = ("function_name", "function_request_id", "message", "token", "step", "entity_id", "run")
    expected = ["fn", "req-1", "FenceSkipped", "dev.o-1.r1", "Pay", "o-1", 1]
    assert [line[k] for k in named] == expected
    for repeated in ("function_arn", "function_memory_size", "correlation_id", "key"):
        assert repeated not in line
