"""A run whose workflow fails and that nothing finishes is a violation on both workflow types, even
when its message ends in a DLQ with a reason (`chaos.scenarios.verdict`): on Express the worker
dead-letters such a run after the queue's last receive, and that dead letter used to excuse it,
so `fence-off:ReleaseInventory` (caught on Standard from every seed) was caught on Express from
none. Its second release is refused by the release's own keyed write (nothing is applied twice);
what the mutant breaks is the run: the retry fails on that refusal instead of replaying the fence's
answer, on every receive, and the order never reaches FAILED."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.draw import Catalogue
from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.scenarios import KINDS
from chaos.schedules import Schedule, run_schedule
from chaos.search import search
from chaos.single import record

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

MUTANT = "fence-off:ReleaseInventory"
# The world Standard catches it in (its recorded reproducer, shrunk): a declined order, the process
# crashing right after the release's transaction committed, so Step Functions retries the step.
AFTER_THE_RELEASE = Schedule(
    outcomes=("payment-declined",),
    crashes=(PointHit("release-inventory", "after:DynamoDB.TransactWriteItems", 1),),
    actions=(),
)


@pytest.fixture(scope="module")
def express(synthesized) -> Path:
    return synthesized("local-express")


def test_the_world_standard_catches_the_release_unfenced_in_is_caught_on_express(express: Path) -> None:
    # Given the world that catches the unfenced release on Standard
    # When it runs on Express with the release's fence off, then on main
    caught = run_schedule(express, AFTER_THE_RELEASE, mutant=by_name(MUTANT)).violations
    clean = run_schedule(express, AFTER_THE_RELEASE).violations

    # Then the mutant's order is stuck (its workflow failed on every receive, its message in the
    # DLQ) and that is a violation; main finishes the same order FAILED, compensated
    assert any("its run's workflow failed" in v and "EffectConditionFailed" in v for v in caught), caught
    assert clean == []


def test_a_short_search_on_express_catches_the_release_unfenced(express: Path) -> None:
    # Given the points every outcome's clean run reaches on Express
    catalogue = Catalogue.of(express, {kind: record(express, kind) for kind in KINDS})

    # When the mutant's search runs from a fixed seed with a small budget
    catch = search(express, by_name(MUTANT), catalogue, seed=1795746754, budget=5)

    # Then it catches it (the Express run before the fix: 0 of 100 worlds from each of 5 seeds)
    assert catch.caught, catch
    assert "its run's workflow failed" in catch.violation
