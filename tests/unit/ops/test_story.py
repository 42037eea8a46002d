"""ops.story: the model, the reading of function logs, the outcome of each attempt, the terminal text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ops.story.__main__ import entity_for_key
from ops.story.__main__ import main as story_main
from ops.story.collect import Workflow, create_route
from ops.story.entries import attempt_outcome
from ops.story.logs import InsightsLogs, Invocation, LocalLogFiles
from ops.story.model import Outcome, StepState, Story
from ops.story.text import render
from orders.domain import order_id_for
from orders.handlers.api import CREATE_ROUTE as HANDLER_ROUTE
from reliability.http import ANONYMOUS, scoped_key

FIXTURES = Path(__file__).parent / "fixtures"


def story(name: str) -> Story:
    # Recorded from `make demo` on the local cloud with `python -m ops.story <order> --json`
    return Story.from_dict(json.loads((FIXTURES / f"story_{name}.json").read_text()))


def test_the_crash_and_redrive_story_shows_the_dead_attempt_redrive_skip_takeover_and_one_charge():
    crash = story("crash_redrive")
    outcomes = [(e.subject, e.outcome) for e in crash.entries]
    assert ("ChargePayment", Outcome.DIED) in outcomes
    assert any(o is Outcome.REDRIVEN for _, o in outcomes)
    assert [e.outcome for e in crash.attempts("ReserveInventory")] == [Outcome.RAN, Outcome.SKIPPED]
    assert [e.outcome for e in crash.attempts("ChargePayment")] == [Outcome.DIED, Outcome.TAKEOVER]
    assert crash.step_state("ReserveInventory") is StepState.SKIPPED
    assert crash.step_state("ChargePayment") is StepState.RETRIED
    assert crash.step_state("MarkFailed") is StepState.NOT_RUN
    assert [c["status"] for c in crash.facts["providers"]["payments"]["charges"]] == ["SUCCEEDED"]
    assert crash.facts["providers"]["payments"]["calls"] == 2
    assert crash.verdict == "completed"


def test_a_declined_story_shows_the_failed_charge_and_the_compensation():
    declined = story("declined")
    assert declined.step_state("ChargePayment") is StepState.FAILED
    assert declined.step_state("ReserveInventory") is StepState.COMPENSATED
    assert declined.step_state("ReleaseInventory") is StepState.RAN
    assert declined.invocations("ReserveInventory") == 1  # the compensation marker is not an invocation


def test_a_story_round_trips_through_json():
    crash = story("crash_redrive")
    again = Story.from_dict(json.loads(json.dumps(crash.to_dict(), default=str)))
    assert again == crash
    assert crash.to_dict()["step_states"]["ChargePayment"] == "retried"


def test_the_terminal_text_is_coloured_on_a_tty_and_plain_when_piped():
    crash = story("crash_redrive")
    plain, coloured = render(crash, color=False), render(crash, color=True)
    assert "\033[" not in plain
    assert "\033[31mdied" in coloured
    for shown in (
        "died",
        "redrive started",
        "skipped by fence",
        "takeover",
        "1 charge(s) succeeded",
        "2 provider call(s)",
        "invariants: completed",
    ):
        assert shown in plain, plain


@pytest.mark.parametrize(
    ("decisions", "error", "expected"),
    [
        (["FenceClaimed", "FenceCompleted"], None, Outcome.RAN),
        (["FenceSkipped"], None, Outcome.SKIPPED),
        (["FenceTakeover", "FenceCompleted"], None, Outcome.TAKEOVER),
        (["FenceClaimed"], "Runtime.ExitError", Outcome.DIED),
        (["FenceTakeover"], "Sandbox.Timedout", Outcome.DIED),
        (["FenceBusy"], "FenceBusy", Outcome.BUSY),
        (["FenceTakeover", "FenceStale"], "StaleFence", Outcome.STALE),
        (["FenceClaimed", "FenceFailed"], "PaymentDeclined", Outcome.FAILED),
        ([], "Runtime.ExitError", Outcome.DIED),
    ],
)
def test_each_attempt_outcome_follows_from_its_fence_decisions_and_how_it_ended(decisions, error, expected):
    invocation = Invocation("charge-payment", "r-1", error=error, lines=[{"decision": d} for d in decisions])
    assert attempt_outcome(invocation)[0] is expected


def test_local_log_files_give_one_invocation_per_request_with_its_duration_and_error(tmp_path):
    line = {
        "timestamp": "2026-11-23 09:24:32,785+0000",
        "function_request_id": "req-1",
        "decision": "FenceClaimed",
        "token": "local.o-abc.r1",
    }
    other = {**line, "function_request_id": "req-2", "token": "local.o-other.r1"}
    (tmp_path / "fn-charge.log").write_text(
        "START RequestId: req-1 Version: $LATEST\n"
        + json.dumps(line)
        + "\n"
        + '{"_aws": {"Timestamp": 1}, "FenceClaimed": [1.0]}\n'
        + "END RequestId: req-1\n"
        + "REPORT RequestId: req-1\tDuration: 339.07 ms\tMemory Size: 256 MB\tWorker: 7"
        + "\tStatus: Runtime.ExitError\n"
        + json.dumps(other)
        + "\n"
        + "REPORT RequestId: req-2\tDuration: 12.00 ms\tMemory Size: 256 MB\tWorker: 7\n"
    )
    (found,) = LocalLogFiles(tmp_path).invocations({"charge-payment": "fn-charge"}, ["o-abc"])
    assert (found.request_id, found.duration_ms, found.error, found.decisions()) == (
        "req-1",
        339.07,
        "Runtime.ExitError",
        ["FenceClaimed"],
    )
    assert found.started == pytest.approx(1795425872.785)


def test_the_workflow_graph_comes_from_the_state_machine_definition():
    definition = {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Task",
                "Resource": "arn:aws:lambda:r:1:function:fn-a",
                "Next": "B",
                "Catch": [{"ErrorEquals": ["Oops"], "Next": "C"}],
            },
            "B": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "arn:aws:lambda:r:1:function:fn-b"},
                "Next": "Done",
            },
            "C": {"Type": "Task", "Resource": "arn:aws:lambda:r:1:function:fn-c", "Next": "Done"},
            "Done": {"Type": "Succeed"},
        },
    }
    workflow = Workflow.from_definition(definition)
    assert workflow.steps == ["A", "B", "C"]
    assert workflow.functions == {"A": "fn-a", "B": "fn-b", "C": "fn-c"}
    assert workflow.edges == [("A", "B", "next"), ("A", "C", "catch Oops")]


def test_the_route_is_the_one_the_handlers_use():
    # (The fence namespace is the library's own, reliability.saga.SAGA_NAMESPACE, no copy to pin.)
    assert create_route() == HANDLER_ROUTE


class FakeInsights:
    """CloudWatch Logs Insights as the API answers: a query id, then rows of fields."""

    def __init__(self, rows_by_query: list[list[dict[str, str]]]) -> None:
        self.rows = list(rows_by_query)
        self.queries: list[dict] = []

    def start_query(self, **kwargs):
        self.queries.append(kwargs)
        return {"queryId": f"q{len(self.queries)}"}

    def get_query_results(self, queryId):
        rows = self.rows.pop(0)
        return {
            "status": "Complete",
            "results": [[{"field": k, "value": v} for k, v in r.items()] for r in rows],
        }


def test_logs_insights_gives_the_same_invocations_on_a_deployed_stage():
    line = {
        "function_request_id": "req-7",
        "decision": "FenceSkipped",
        "token": "dev.o-abc.r1",
        "timestamp": "2026-11-23 09:24:32,785+0000",
    }
    client = FakeInsights([[{"@message": json.dumps(line)}], [{"@requestId": "req-7", "@duration": "48.5"}]])
    (found,) = InsightsLogs(client, poll_seconds=0).invocations(
        {"charge-payment": "svc-dev-charge"}, ["o-abc"]
    )
    assert (found.request_id, found.duration_ms, found.decisions()) == ("req-7", 48.5, ["FenceSkipped"])
    assert client.queries[0]["logGroupNames"] == ["/aws/lambda/svc-dev-charge"]
    assert '@message like "o-abc"' in client.queries[0]["queryString"]
    assert '"req-7"' in client.queries[1]["queryString"]


def test_with_no_target_running_make_story_shows_the_story_the_demo_recorded(tmp_path, monkeypatch, capsys):
    # Given the demo's local cloud is gone (no outputs.json) but it recorded the order's story
    crash = story("crash_redrive")
    (tmp_path / "stories").mkdir()
    (tmp_path / "stories" / f"{crash.entity_id}.json").write_text(json.dumps(crash.to_dict(), default=str))
    monkeypatch.setenv("LOCALCLOUD_DIR", str(tmp_path))
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    # When the operator asks for it, plain (piped)
    assert story_main([crash.entity_id, "--color", "never"]) == 0
    # Then the recorded timeline is shown, and where it came from is said
    captured = capsys.readouterr()
    assert "died" in captured.out
    assert "takeover" in captured.out
    assert "recorded" in captured.err


def test_a_client_key_names_the_order_it_created_for_its_caller():
    # The order id is derived from the stored key (orders.domain.order_id_for), which names the
    # caller: the local cloud's one caller by default, another caller's same key another order
    stored = scoped_key(stage="local", route="POST /orders", raw_key="demo-1", caller=ANONYMOUS).value
    assert entity_for_key("demo-1", stage="local") == order_id_for(stored)
    assert entity_for_key("demo-1", stage="local", caller="arn:aws:iam::1:user/b") != order_id_for(stored)


def test_a_takeover_that_found_the_effect_at_the_external_system_says_it_reconciled():
    lines: list[dict[str, Any]] = [
        {"decision": "FenceTakeover"},
        {"decision": "FenceTakeover", "reconciled": True},
    ]
    outcome, detail = attempt_outcome(Invocation("charge-payment", "r-2", lines=lines))
    assert outcome is Outcome.TAKEOVER
    assert "reconciled" in detail
