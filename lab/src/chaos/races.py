"""Operator races: worlds where an operator's two recoveries meet a run stopped at a boundary.

An execution stopped right after a step's write is left for an operator. If the entity's run then
ended FAILED, `make rerun` starts its next run; a later redrive of the stopped execution continues
the old run, whose step runs again beside the new one. A guard that keeps a stale run's step from
writing over the next run is needed only there (the sample's fence on the step that marks an
order failed: a redrive of run 1 set FAILED over run 2). Random schedules reach that order of
three actions seldom (0 of 100 worlds from one seed, 2 of 5 seeds on another service), so a
mutant's search plays each such world once: for each outcome and each boundary of the mutant's
functions (`chaos.draw.at_boundary`) that outcome's run reaches, a stop there, a rerun of the
entity, a redrive. Derived from the catalogue: nothing listed per step.
"""

from __future__ import annotations

import random

from chaos.draw import Catalogue, at_boundary
from chaos.schedules import Action, Schedule

# The operator's recoveries, in the order that lets the old run's step meet the new run; then
# the cloud runs until it is at rest.
RECOVERIES = (Action("rerun", entity=0), Action("redrive"), Action("wait"))


def races(catalogue: Catalogue) -> list[Schedule]:
    """One world per (outcome, boundary of the catalogue's functions): the catalogue is a mutant's
    (`Catalogue.only`), so these are the boundaries of what it changed."""
    return [
        Schedule(outcomes=(kind,), crashes=(), stops=(hit,), actions=RECOVERIES)
        for kind, hits in sorted(catalogue.by_kind.items())
        for hit in hits
        if at_boundary(hit)
    ]


class RaceDraw:
    """A search's operator races, each once, in an order drawn from its seed."""

    def __init__(self, catalogue: Catalogue, rng: random.Random) -> None:
        self._left = races(catalogue)
        rng.shuffle(self._left)

    def next(self) -> Schedule | None:
        return self._left.pop() if self._left else None
