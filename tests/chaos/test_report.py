"""The report: figures, verdict (fails without a control violation or with an unexercised point)."""

from __future__ import annotations

import json

from chaos.interleave import PairResult
from chaos.points import PointHit
from chaos.recovery import Recovery
from chaos.report import Report, classify
from chaos.single import ScheduleResult

POINTS = {
    "completed": [PointHit("api", "before:DynamoDB.PutItem"), PointHit("api", "after:DynamoDB.PutItem")]
}


def _result(label: str, violations: list[str], drawn: tuple[str, ...] = ("crash",)) -> ScheduleResult:
    return ScheduleResult(
        "single",
        label,
        [f"crash {label}"],
        [label],
        violations,
        Recovery(client_retries=1),
        drawn=list(drawn),
    )


def test_a_clean_run_with_a_caught_control_passes(tmp_path):
    report = Report(command="make chaos", seed=1, catalogue=POINTS)
    for hit in POINTS["completed"]:
        report.single.add(_result(hit.label, []))
        report.exercised.add(hit.label)
    report.lost.add(POINTS["completed"][1].label)
    report.add_pair(PairResult("api", interleavings=10), zombie=False)
    report.control.add(_result("api:after:DynamoDB.PutItem#1", ["o-1: 2 ChargePayment effects (at most 1)"]))

    json_path, md_path = report.write(tmp_path)

    data = json.loads(json_path.read_text())
    assert data["ok"] is True
    assert data["invariant_violations"] == 0
    assert data["control_violations"] == 1
    assert data["control"]["violation_kinds"] == {"double ChargePayment": 1}
    assert data["crash_points"]["exercised"] == data["crash_points"]["points"] == 2
    assert data["interleavings"]["total"] == 10
    assert "| single faults | 2 | 2 | 0.0 | 0 | 0 | - |" in md_path.read_text()


def test_no_control_violation_or_an_unexercised_point_fails_the_run():
    report = Report(command="make chaos", seed=1, catalogue=POINTS)
    report.exercised.add(POINTS["completed"][0].label)
    assert not report.ok  # control found nothing, and one point never crashed
    report.control.add(_result("x", ["o-1: 2 notify effects (at most 1)"]))
    assert not report.ok
    report.exercised.add(POINTS["completed"][1].label)
    assert not report.ok  # the call's answer was never lost
    report.lost.add(POINTS["completed"][1].label)
    assert report.ok
    report.random.add(_result("y", ["o-2: 2 analytics effects (at most 1)"]))
    assert not report.ok


def test_violations_are_classified_by_the_effect_repeated():
    assert classify("o-1: 2 ChargePayment effects (at most 1)") == "double ChargePayment"
    assert classify("o-1: 2 notify effects (at most 1)") == "double notify"
    assert classify("o-1: FAILED but its ReserveInventory effect was not undone by ReleaseInventory") == (
        "not compensated"
    )
    assert classify("day#2026-11-22: the counter says 2 order(s) but 1 event(s) were counted") == "other"
    assert classify("o-1: RUNNING: neither completed, compensated, nor in a DLQ with a reason") == (
        "not finished"
    )


def test_the_report_says_which_aws_calls_an_error_response_was_injected_at():
    # Given two points at one AWS call, one of them answered with an injected error by a schedule
    report = Report(command="make chaos", seed=1, catalogue=POINTS)
    report.errored.add(POINTS["completed"][1].label)
    # Then the report counts the calls and names the one never errored
    points = report.crash_points()
    assert (points["calls"], points["errored"]) == (2, 1)
    assert points["calls_never_errored"] == [POINTS["completed"][0].label]
    assert points["per_function"]["api"] == {"points": 2, "exercised": 0, "calls": 2, "errored": 1}


def test_the_report_counts_the_schedules_that_drew_each_kind_of_fault_and_the_answers_lost(tmp_path):
    # Given random schedules that drew lost answers, stops and time jumps, and an operator tool's call
    report = Report(
        command="make chaos",
        seed=1,
        catalogue=POINTS,
        operator_calls=[PointHit("ops.rerun", "after:DynamoDB.UpdateItem", 1)],
    )
    report.random.add(_result("a", [], ("lost-answer", "stop", "time-travel")))
    report.random.add(_result("b", [], ("lost-answer", "redrive")))
    report.lost.add("ops.rerun:after:DynamoDB.UpdateItem#1")

    json_path, md_path = report.write(tmp_path)

    # Then per kind, how many schedules drew it, and which calls never had their answer lost
    data = json.loads(json_path.read_text())
    assert data["categories"]["random_schedules"]["drawn"] == {
        "lost-answer": 2,
        "redrive": 1,
        "stop": 1,
        "time-travel": 1,
    }
    points = data["crash_points"]
    assert (points["answers"], points["answers_lost"]) == (2, 1)
    assert points["answers_never_lost"] == ["api:after:DynamoDB.PutItem#1"]
    assert "| lost-answer | 0 | 2 | 0 | 0 | 0 |" in md_path.read_text()


def test_the_report_counts_the_schedules_with_copies_of_a_run_at_once_and_time_limit_kills(tmp_path):
    # Given three random schedules: two ran copies of a run at once, one killed an execution at
    # its time limit
    report = Report(command="make chaos WORKFLOW=express", seed=1, catalogue=POINTS)
    for copies, kills in ((2, 0), (4, 1), (0, 0)):
        result = _result("a", [])
        result.recovery = Recovery(concurrent_copies=copies, time_limit_kills=kills)
        report.random.add(result)

    json_path, md_path = report.write(tmp_path)

    # Then the report counts the schedules, not the copies
    random = json.loads(json_path.read_text())["categories"]["random_schedules"]
    assert (random["schedules_with_concurrent_copies"], random["schedules_with_time_limit_kills"]) == (2, 1)
    text = md_path.read_text()
    assert "interleaved in the order the schedule's seed draws) in 2 random schedules;" in text
    assert "(Express; the invocation runs on) in 1 random schedules." in text
