"""Drawing schedules: the windows come from the templates, each schedule draws from a swarm of
kinds, half leave an effect at its boundary across a window, coverage steers the draws, a seed's
schedules do not depend on the budget, and a violating schedule shrinks to what it needs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chaos.draw import ACTIONS, FAULTS, Catalogue, Drawer, Windows, at_boundary, planned
from chaos.points import PointHit
from chaos.schedules import DAY, Action, Schedule
from chaos.shrink import shrink
from chaos.single import ScheduleResult
from emulator.templates import read_template, resources_of_type
from ops.redrive import RESTART_SAFE_SECONDS
from reliability.cdk.config import REDRIVE_WINDOW_DAYS

POINTS = {
    "completed": tuple(
        PointHit.parse(label)
        for label in (
            "api:before:DynamoDB.PutItem#1",
            "api:after:DynamoDB.PutItem#1",
            "charge-payment:before:DynamoDB.UpdateItem#1",
            "charge-payment:after:DynamoDB.UpdateItem#1",
            "charge-payment:after:DynamoDB.PutItem#2",
            "charge-payment:fence:after-effect:ChargePayment#1",
            "charge-payment:after:DynamoDB.GetItem#1",
        )
    ),
    "payment-declined": (PointHit.parse("release-inventory:after:DynamoDB.TransactWriteItems#1"),),
}


@pytest.fixture(scope="module")
def catalogue(assembly: Path) -> Catalogue:
    return Catalogue.of(assembly, POINTS, [PointHit.parse("ops.rerun:after:DynamoDB.UpdateItem#1")])


def test_the_windows_are_read_from_the_synthesized_templates_and_aws_s_own(assembly):
    windows = dict((seconds, name) for name, seconds in Windows.read(assembly).spans)
    environment = {
        name: int(value)
        for function in resources_of_type(read_template(assembly, "app"), "AWS::Lambda::Function").values()
        for name, value in function["Properties"]["Environment"]["Variables"].items()
        if name in ("PROVIDER_KEY_LIFETIME_SECONDS", "FENCE_TTL_SECONDS", "IDEMPOTENCY_TTL_SECONDS")
    }
    # every key's lifetime the functions are given, and the windows AWS sets
    assert set(environment.values()) | {REDRIVE_WINDOW_DAYS * DAY, RESTART_SAFE_SECONDS} <= set(windows)
    assert min(windows) == 20  # the step functions' timeout: their fence lease


def test_a_jump_is_just_past_a_window_just_short_of_one_or_some_days(assembly):
    windows = Windows((("provider key", DAY),))
    rng = __import__("random").Random(3)
    jumps = Counter(windows.jump(rng) for _ in range(400))
    assert DAY + 3600 in jumps  # just past
    assert DAY - 3600 in jumps  # just short
    assert jumps[DAY + 3600] > jumps[DAY - 3600] > 0
    assert any(j % DAY == 0 and j // DAY in range(1, 16) for j in jumps)


def test_an_effect_is_left_at_its_boundary_then_a_window_crossed(catalogue, monkeypatch):
    monkeypatch.setattr("chaos.draw.LEFT_SHARE", 1.0)  # every schedule of that family
    for seed in range(100):
        schedule = Drawer(catalogue, seed).draw()
        assert (schedule.crashes, schedule.errors, schedule.lost, schedule.timeouts) == ((), (), (), ())
        assert schedule.actions[0].kind == "time-travel"
        (stop,) = schedule.stops
        assert at_boundary(stop)
        # its first order is one whose run reaches that point
        assert stop in catalogue.points(schedule.outcomes[:1])
        assert schedule.gives_up == ((0,) if stop.function == "api" else ())


def test_a_swarm_schedule_draws_only_from_a_subset_of_the_kinds(catalogue, monkeypatch):
    monkeypatch.setattr("chaos.draw.LEFT_SHARE", 0.0)  # every schedule of that family
    drawn = [set(Drawer(catalogue, seed).draw().kinds()) for seed in range(400)]
    # each kind is left out of about half the schedules, with the others it would meet: a kind
    # that heals a fault (a redrive) is absent as often as present, so what it heals stands
    named = ("crash", "error", "lost-answer", "stop", "time-travel", "redrive", "restart", "rerun")
    for kind in (*named, "another-caller", "late-retry", "foreign-event", "late-copy"):
        assert 0.25 <= sum(kind not in kinds for kinds in drawn) / len(drawn) <= 0.85, kind
    both_absent = sum(not kinds & {"redrive", "restart"} for kinds in drawn) / len(drawn)
    assert both_absent >= 0.2
    assert sum(len(kinds) <= 5 for kinds in drawn) >= 0.1 * len(drawn)
    every = set().union(*drawn)
    assert every == {*FAULTS, *ACTIONS, "duplicate-delivery", "concurrent-restart"} - {
        "wait",
        "deliver",
    }  # a plain delivery is no fault; a restart while the first copy runs is chaos.concurrent's


def test_lost_answers_are_drawn_at_the_calls_answers_and_the_operator_tools(catalogue):
    lost = {h.label for seed in range(300) for h in Drawer(catalogue, seed).draw().lost}
    assert "ops.rerun:after:DynamoDB.UpdateItem#1" in lost
    assert all(":after:" in label for label in lost)


def test_a_seed_s_schedules_are_the_same_whatever_the_budget(catalogue):
    short, long = Drawer(catalogue, 7), Drawer(catalogue, 7)
    first = [short.draw() for _ in range(5)]
    assert [long.draw() for _ in range(12)][:5] == first


def test_coverage_steers_the_boundaries_an_effect_is_left_at(catalogue, monkeypatch):
    # Given a search whose every planned fault fired
    monkeypatch.setattr("chaos.draw.LEFT_SHARE", 1.0)
    drawer = Drawer(catalogue, 11)
    left: list[str] = []
    for _ in range(60):
        schedule = drawer.draw()
        fired = [h.label for h in (*schedule.crashes, *schedule.stops, *schedule.timeouts)]
        result = ScheduleResult(
            "random",
            "",
            [],
            fired,
            [],
            errored=[h.label for h, _ in schedule.errors],
            lost=[h.label for h in schedule.lost],
        )
        drawer.observe(schedule, result)
        left.append(schedule.stops[0].label)
    # Then each boundary of the completed order's run was left before any was left twice
    boundaries = {h.label for h in POINTS["completed"] if at_boundary(h)}
    completed = [label for label in left if label in boundaries]
    assert set(completed[: len(boundaries)]) == boundaries
    assert ("stop", completed[0]) in drawer.covered
    assert planned(Schedule(("completed",), (), (), stops=(POINTS["completed"][1],))) == {
        ("stop", "api:after:DynamoDB.PutItem#1")
    }


def test_a_violating_schedule_shrinks_to_the_parts_the_violation_needs():
    stop = PointHit.parse("charge-payment:fence:after-effect:ChargePayment#1")
    big = Schedule(
        outcomes=("completed", "payment-declined", "completed"),
        crashes=(PointHit.parse("api:after:DynamoDB.PutItem#1"),),
        stops=(stop,),
        lost=(PointHit.parse("charge-payment:after:DynamoDB.UpdateItem#1"),),
        actions=(Action("retry"), Action("time-travel", days=2), Action("wait"), Action("rerun", entity=2)),
    )
    runs: list[Schedule] = []

    def violates(schedule: Schedule) -> bool:  # the violation needs the stop and a day passing
        runs.append(schedule)
        return stop in schedule.stops and any(a.jump >= DAY for a in schedule.actions)

    smallest = shrink(big, violates)
    assert smallest == Schedule(
        outcomes=("completed",), crashes=(), stops=(stop,), actions=(Action("time-travel", days=2),)
    )
    assert len(runs) <= 20
