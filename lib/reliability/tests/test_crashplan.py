"""The crash plan read from the environment, and a shared plan's per-function views: what each keeps."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reliability.faults import crash_point
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash

POINTS = "RETRYSAFE_CRASH_POINTS"


# --- from_env: mode, state dir, scope ----------------------------------------------------------


def test_a_plan_from_the_environment_exits_by_default() -> None:
    plan = CrashPlan.from_env({POINTS: "p"})
    assert plan is not None
    assert (plan.points, plan.mode, plan.state_dir) == ({"p": 1}, "exit", None)


@pytest.mark.parametrize(("mode", "expected"), [("exit", "exit"), ("raise", "raise")])
def test_a_plan_from_the_environment_keeps_the_mode_it_names(mode: str, expected: str) -> None:
    plan = CrashPlan.from_env({POINTS: "p", "RETRYSAFE_CRASH_MODE": mode})
    assert plan is not None
    assert plan.mode == expected


def test_a_plan_from_the_environment_counts_hits_in_its_state_dir(tmp_path: Path) -> None:
    hits = str(tmp_path / "hits")
    env = {POINTS: "p=1", "RETRYSAFE_CRASH_MODE": "raise", "RETRYSAFE_CRASH_STATE_DIR": hits}
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert plan.state_dir == hits
    # A hit takes a marker in the directory, so a second plan read from the same environment
    # (another process) finds the one hit spent
    with pytest.raises(SimulatedCrash):
        plan.hit("p")
    assert len(list((tmp_path / "hits").iterdir())) == 1
    again = CrashPlan.from_env(env)
    assert again is not None
    again.hit("p")


def test_an_empty_state_dir_counts_in_memory() -> None:
    plan = CrashPlan.from_env({POINTS: "p", "RETRYSAFE_CRASH_STATE_DIR": ""})
    assert plan is not None
    assert plan.state_dir is None


def test_the_crash_scope_variable_names_the_function() -> None:
    # Given entries scoped to "pay" and the scope variable naming it (no Lambda function name)
    env = {POINTS: "a@pay=2,b@audit", "RETRYSAFE_CRASH_SCOPE": "svc-dev-pay"}
    plan = CrashPlan.from_env(env)
    # Then the plan arms the entry of that function only
    assert plan is not None
    assert plan.points == {"a": 2}


def test_the_crash_scope_variable_wins_over_the_lambda_function_name() -> None:
    env = {
        POINTS: "a@pay,b@audit",
        "RETRYSAFE_CRASH_SCOPE": "pay",
        "AWS_LAMBDA_FUNCTION_NAME": "svc-dev-audit",
    }
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert plan.points == {"a": 1}


def test_an_empty_function_name_arms_no_scoped_entry() -> None:
    env = {POINTS: "a@pay,b", "AWS_LAMBDA_FUNCTION_NAME": ""}
    plan = CrashPlan.from_env(env)
    assert plan is not None
    assert (plan.points, plan.scoped) == ({"b": 1}, ())


# --- armed ------------------------------------------------------------------------------------


def test_armed_tells_the_points_of_the_plan() -> None:
    plan = CrashPlan.parse("p=2,after:SQS.SendMessage")
    assert [plan.armed(p) for p in ("p", "after:SQS.SendMessage", "q", "")] == [True, True, False, False]


# --- for_function: the view of a shared plan ----------------------------------------------------


def test_a_function_view_keeps_the_plans_mode_and_state_dir(tmp_path: Path) -> None:
    plan = CrashPlan.parse("x@pay", mode="exit", state_dir=str(tmp_path))
    view = plan.for_function("svc-pay")
    assert (view.points, view.mode, view.state_dir) == ({"x": 1}, "exit", str(tmp_path))


def test_a_function_view_counts_its_hits_in_the_plans_state_dir(tmp_path: Path) -> None:
    # Given a shared plan with a state dir and an entry scoped to one function
    plan = CrashPlan.parse("x@pay=1", mode="raise", state_dir=str(tmp_path))
    # When that function's view crashes at the point
    with pytest.raises(SimulatedCrash, match="simulated crash at x"):
        crash_point("x", plan.for_function("svc-pay"))
    # Then the hit is a marker in the state dir, which a later view (another worker) sees spent
    assert len(list(tmp_path.iterdir())) == 1
    later = CrashPlan.parse("x@pay=1", mode="raise", state_dir=str(tmp_path))
    crash_point("x", later.for_function("svc-pay"))


def test_no_function_arms_no_scoped_entry() -> None:
    plan = CrashPlan.parse("x@pay,y", mode="raise")
    for name in (None, ""):
        view = plan.for_function(name)
        assert view.points == {"y": 1}
        crash_point("x", view)


def test_a_function_view_counts_under_the_plans_lock() -> None:
    # Given a shared plan whose count is being taken (its lock held, as by another function's hit)
    plan = CrashPlan.parse("x@pay=1", mode="raise")
    view = plan.for_function("svc-pay")
    outcome: list[str] = []
    done = threading.Event()

    def hit() -> None:
        try:
            view.hit("x")
            outcome.append("passed")
        except SimulatedCrash:
            outcome.append("crashed")
        done.set()

    with plan._lock:
        thread = threading.Thread(target=hit)
        thread.start()
        # Then a hit through the function's view waits for it
        assert not done.wait(0.2)
    thread.join(5)
    assert outcome == ["crashed"]
