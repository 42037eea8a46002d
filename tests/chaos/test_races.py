"""Operator races (`chaos.races`): a mutant's search plays, once each, a stop at each boundary of
its functions followed by a rerun and a redrive, and followed by a recovery on the last day."""

from __future__ import annotations

import random

import pytest

from chaos.concurrent import WORKER_QUEUE
from chaos.draw import Catalogue, Windows, at_boundary, workflow_of
from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.races import RECOVERIES, TWIN_RERUNS, RaceDraw, late_recoveries, races
from chaos.schedules import Action, Schedule, run_schedule
from reliability.cdk.config import REDRIVE_WINDOW_DAYS, SECONDS_PER_DAY

AFTER_WRITE = PointHit.parse("mark-failed:after:DynamoDB.TransactWriteItems#1")
BEFORE_WRITE = PointHit.parse("mark-failed:before:DynamoDB.TransactWriteItems#1")
AFTER_READ = PointHit.parse("mark-failed:after:DynamoDB.GetItem#1")


def _catalogue(by_kind: dict[str, tuple[PointHit, ...]], *, express: bool = False) -> Catalogue:
    return Catalogue(by_kind, queues=(), windows=Windows(()), express=express)


def test_one_race_per_outcome_and_boundary_and_nothing_else():
    catalogue = _catalogue(
        {"payment-declined": (BEFORE_WRITE, AFTER_WRITE, AFTER_READ), "out-of-stock": (AFTER_WRITE,)}
    )
    worlds = races(catalogue)
    late = late_recoveries(express=False)
    assert [(w.outcomes, w.stops, w.actions) for w in worlds] == [
        (("out-of-stock",), (AFTER_WRITE,), RECOVERIES),
        (("out-of-stock",), (AFTER_WRITE,), late),
        (("payment-declined",), (AFTER_WRITE,), RECOVERIES),
        (("payment-declined",), (AFTER_WRITE,), late),
    ]
    assert [a.kind for a in RECOVERIES] == ["rerun", "redrive", "wait"]  # the order that races
    assert at_boundary(AFTER_WRITE)
    assert not at_boundary(BEFORE_WRITE)
    assert not at_boundary(AFTER_READ)


def test_each_race_is_drawn_once_in_an_order_the_seed_fixes():
    catalogue = _catalogue({kind: (AFTER_WRITE,) for kind in ("a", "b", "c")})
    first = RaceDraw(catalogue, random.Random(1))
    drawn = [first.next() for _ in range(7)]
    assert drawn[6] is None
    assert sorted(w.outcomes for w in drawn[:6] if w) == [("a",), ("a",), ("b",), ("b",), ("c",), ("c",)]
    again = RaceDraw(catalogue, random.Random(1))
    assert [again.next() for _ in range(6)] == drawn[:6]


def test_the_late_recovery_comes_on_the_last_day_the_operator_tools_allow():
    (standard, redrive, wait) = late_recoveries(express=False)
    assert REDRIVE_WINDOW_DAYS * SECONDS_PER_DAY - standard.jump == 3600
    assert (redrive.kind, wait.kind) == ("redrive", "wait")
    express = late_recoveries(express=True, receives=2)
    assert [a.kind for a in express] == [
        *("deliver", "throttled-poll", "throttled-poll"),  # its message waits in the DLQ
        *("time-travel", "dlq-redrive", "redrive", "wait"),
    ]
    assert express[3] == standard  # the same day


@pytest.fixture(scope="module")
def express(synthesized):
    return synthesized("local-express")


# ChargePayment's attempt charged the provider and recorded the call, then its execution stopped
# (on Express: was killed, and its message waited in the DLQ); the operator's recovery on the last
# day it may finds the provider's key long forgotten.
@pytest.mark.parametrize("stage", ["assembly", "express"])
@pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
def test_a_late_recovery_tells_a_takeover_that_does_not_reconcile(stage, request):
    assembly = request.getfixturevalue(stage)
    is_express, _, receives = workflow_of(assembly)
    late_redrive = Schedule(
        ("completed",),
        crashes=(),
        stops=(PointHit.parse("charge-payment:after:DynamoDB.PutItem#2"),),
        actions=late_recoveries(express=is_express, receives=receives),
    )
    assert run_schedule(assembly, late_redrive).violations == []
    mutant = by_name("reconcile-off:ChargePayment")
    violations = run_schedule(assembly, late_redrive, mutant=mutant).violations
    assert any(v.endswith("2 ChargePayment effects (at most 1)") for v in violations), violations


def test_on_express_each_outcome_also_races_twin_copies_with_a_rerun():
    catalogue = _catalogue({"out-of-stock": (AFTER_WRITE,), "completed": ()}, express=True)
    twins = [w for w in races(catalogue) if not w.stops]
    assert [(w.outcomes, w.actions[0].kind, w.actions[0].seed) for w in twins] == [
        (("out-of-stock",), "twin-rerun", seed) for seed in range(TWIN_RERUNS)
    ]
    assert all(w.actions[0].queue == WORKER_QUEUE for w in twins)


# Express has no StopExecution and no redrive: the copy of run 1 that meets run 2 is a twin still
# running when the operator reruns the entity the other copy failed. Interleaving 2 of the races'
# is such an order (the search plays seeds 0-3 of each outcome).
TWIN_THEN_RERUN = Schedule(
    ("out-of-stock",), crashes=(), actions=(Action("twin-rerun", queue=WORKER_QUEUE, seed=2), Action("wait"))
)


@pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
def test_on_express_a_twin_still_running_after_a_rerun_tells_markfaileds_fence(express):
    assert run_schedule(express, TWIN_THEN_RERUN).violations == []
    (violation,) = run_schedule(express, TWIN_THEN_RERUN, mutant=by_name("fence-off:MarkFailed")).violations
    assert violation.endswith("status FAILED without step MarkFailed recorded done (it is absent)")
