"""Operator races (`chaos.races`): a mutant's search plays, once each, a stop at each boundary of
its functions followed by a rerun and a redrive."""

from __future__ import annotations

import random

from chaos.draw import Catalogue, Windows, at_boundary
from chaos.points import PointHit
from chaos.races import RECOVERIES, RaceDraw, races

AFTER_WRITE = PointHit.parse("mark-failed:after:DynamoDB.TransactWriteItems#1")
BEFORE_WRITE = PointHit.parse("mark-failed:before:DynamoDB.TransactWriteItems#1")
AFTER_READ = PointHit.parse("mark-failed:after:DynamoDB.GetItem#1")


def _catalogue(by_kind: dict[str, tuple[PointHit, ...]]) -> Catalogue:
    return Catalogue(by_kind, queues=(), windows=Windows(()))


def test_one_race_per_outcome_and_boundary_and_nothing_else():
    catalogue = _catalogue(
        {"payment-declined": (BEFORE_WRITE, AFTER_WRITE, AFTER_READ), "out-of-stock": (AFTER_WRITE,)}
    )
    worlds = races(catalogue)
    assert [(w.outcomes, w.stops) for w in worlds] == [
        (("out-of-stock",), (AFTER_WRITE,)),
        (("payment-declined",), (AFTER_WRITE,)),
    ]
    assert all(w.actions == RECOVERIES for w in worlds)
    assert [a.kind for a in RECOVERIES] == ["rerun", "redrive", "wait"]  # the order that races
    assert at_boundary(AFTER_WRITE)
    assert not at_boundary(BEFORE_WRITE)
    assert not at_boundary(AFTER_READ)


def test_each_race_is_drawn_once_in_an_order_the_seed_fixes():
    catalogue = _catalogue({kind: (AFTER_WRITE,) for kind in ("a", "b", "c")})
    first = RaceDraw(catalogue, random.Random(1))
    drawn = [first.next() for _ in range(4)]
    assert drawn[3] is None
    assert sorted(w.outcomes for w in drawn[:3] if w) == [("a",), ("b",), ("c",)]
    again = RaceDraw(catalogue, random.Random(1))
    assert [again.next() for _ in range(3)] == drawn[:3]
