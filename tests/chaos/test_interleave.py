"""Systematic interleavings: the scheduler and its depth-first search, two attempts of one step,
one request, and a zombie that resumes after its lease passed to another attempt."""

from __future__ import annotations

from math import comb

import pytest

from chaos.interleave import Pair, explore, run_interleaving
from chaos.points import CrashController
from chaos.scheduler import Attempt, Chooser, Scheduler, SkewClock, dfs
from reliability.errors import StaleFence

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


@pytest.mark.parametrize(("a", "b"), [(1, 1), (2, 3), (3, 3), (4, 2)])
def test_the_search_runs_every_interleaving_of_two_attempts_exactly_once(a, b):
    seen: list[tuple[str, ...]] = []

    def one(chooser: Chooser) -> None:
        controller = CrashController()
        order: list[str] = []

        def attempt(name: str, calls: int) -> Attempt:
            def run() -> None:
                for i in range(calls):
                    controller.hit(name, "before:Fake.Call")  # parks here
                    order.append(f"{name}{i}")

            return Attempt(run)

        Scheduler(controller, SkewClock()).run([attempt("A", a), attempt("B", b)], chooser)
        seen.append(tuple(order))

    count = dfs(one)
    assert count == comb(a + b, a)
    assert len(set(seen)) == count  # all distinct: no interleaving twice, none missed


def test_every_interleaving_of_two_attempts_of_mark_completed_keeps_every_invariant(assembly):
    result = explore(assembly, Pair("MarkCompleted"))
    # One TransactWriteItems (and nothing else) per attempt: C(2, 1) = 2 interleavings
    assert result.interleavings == 2
    assert result.violations == []


def test_a_zombie_that_resumes_after_its_lease_passed_cannot_record_its_charge(assembly):
    # Given attempt 0 claims ChargePayment and charges (3 calls: claim, provider call, charge),
    # then stalls; attempt 1 comes one lease later, takes the fence over and runs to the end
    script = [0, 0, 0] + [1] * 6

    def choose(enabled: list[int]) -> int:
        pick = script.pop(0) if script else enabled[0]
        return pick if pick in enabled else enabled[0]

    run = run_interleaving(assembly, Pair("ChargePayment", late=True), choose)
    zombie, successor = run.attempts

    # When the zombie resumes and tries to complete: StaleFence, its completion not recorded
    assert isinstance(zombie.error, StaleFence)
    assert successor.error is None
    # Then there is one charge: the successor's takeover reconciled (found the zombie's charge by
    # order and token) instead of calling the provider again
    assert run.problems == []
    (row,) = run.verdict.rows.values()
    assert (row.effects["ChargePayment"], row.effects["provider calls"], row.status) == (1, 1, "COMPLETED")
