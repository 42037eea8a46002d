"""Derived mutants once declared equivalent that a world tells apart (`proof.mutants`): each world
passes on main and violates with the mutant, so the mutant is not declared equivalent."""

from __future__ import annotations

import pytest

from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_schedule

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# MarkFailed sets a value, FAILED, yet not only once per run: its execution stopped right after
# its commit, `make rerun` starts run 2, then a redrive of run 1's stopped execution runs run 1's
# MarkFailed again, and unfenced it sets FAILED over run 2 (the wallet copy's search found it:
# seed 1795760993, 33 worlds).
RERUN_THEN_REDRIVE = Schedule(
    ("payment-declined",),  # the outcome of the one request it places
    crashes=(),
    stops=(PointHit.parse("mark-failed:after:DynamoDB.TransactWriteItems#1"),),
    actions=(Action("rerun"), Action("redrive"), Action("wait")),
)


def test_markfaileds_fence_is_not_equivalent_a_redrive_after_a_rerun_tells_it_apart(assembly):
    mutant = by_name("fence-off:MarkFailed")
    assert not mutant.equivalent
    assert run_schedule(assembly, RERUN_THEN_REDRIVE).violations == []
    (violation,) = run_schedule(assembly, RERUN_THEN_REDRIVE, mutant=mutant).violations
    assert violation.endswith("status FAILED without step MarkFailed recorded done (it is absent)")
