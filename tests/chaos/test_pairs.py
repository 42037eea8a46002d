"""A mutant search's interleavings: each at most once, pairs drawn by how many they have left."""

from __future__ import annotations

import random
from math import comb

import pytest

from chaos.interleave import Pair
from chaos.pairs import PairDraw, Unexplored, calls_of
from chaos.points import CrashController, PointHit
from chaos.scheduler import Attempt, Scheduler, SkewClock


def _run(tree: Unexplored, rng: random.Random, a: int, b: int) -> tuple[str, ...]:
    """Two fake attempts of a and b calls, interleaved by the tree's chooser."""
    controller = CrashController()
    order: list[str] = []

    def attempt(name: str, calls: int) -> Attempt:
        def run() -> None:
            for i in range(calls):
                controller.hit(name, "before:Fake.Call")  # parks here
                order.append(f"{name}{i}")

        return Attempt(run)

    chooser = tree.chooser(rng)
    Scheduler(controller, SkewClock()).run([attempt("A", a), attempt("B", b)], chooser)
    tree.ran(chooser.trace)
    return tuple(order)


@pytest.mark.parametrize(("a", "b"), [(1, 1), (2, 2), (3, 2)])
def test_every_interleaving_runs_once_before_the_pair_is_exhausted(a, b):
    tree, rng, seen = Unexplored(), random.Random(5), []
    while not tree.exhausted:
        seen.append(_run(tree, rng, a, b))
    assert len(seen) == len(set(seen)) == comb(a + b, a)


def test_pairs_are_drawn_by_the_interleavings_they_have_left_and_an_exhausted_one_never():
    # Given a charge pair (4 calls an attempt: 70 interleavings) and a one-call step (2)
    charge, ledger = Pair("ChargePayment"), Pair("RecordLedger")
    points = {
        "completed": [
            *(PointHit("charge-payment", f"before:DynamoDB.Op{i}") for i in range(4)),
            PointHit("record-ledger", "before:DynamoDB.TransactWriteItems"),
        ]
    }
    assert (calls_of("ChargePayment", points), calls_of("RecordLedger", points)) == (4, 1)
    draw = PairDraw.of([charge, ledger], points)
    rng = random.Random(2)
    # Then the charge is drawn about 70 times as often
    drawn = [draw.next(rng) for _ in range(300)]
    assert drawn.count(charge) > 250
    # and once the one-call step's 2 interleavings have run, never again
    for _ in range(2):
        _run(draw.trees[ledger], rng, 1, 1)
    assert draw.left == [charge]
    assert {draw.next(rng) for _ in range(50)} == {charge}
