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

The other race is with the clock: the stopped execution recovered an hour before Step Functions'
redrive window closes (`late_recoveries`), when every shorter-lived key, record and lease has
expired. A takeover then meets an effect whose idempotency key its external
system may have forgotten: what a leased step's reconcile is for. Random schedules reach it when
a stop and a long enough jump meet (for the sample's leased step, a median of 14 worlds, and
once none in 100); here each boundary gets it once.

Express has neither a stop nor a redrive: its rerun race is two copies of a run at once and an
operator who reruns the entity once it reads FAILED (`chaos.concurrent.twin_rerun`), a few
interleavings per outcome.
"""

from __future__ import annotations

import random

from chaos.concurrent import WORKER_QUEUE, left_in_the_dlq
from chaos.draw import Catalogue, at_boundary
from chaos.schedules import Action, Schedule
from reliability.cdk.config import REDRIVE_WINDOW_DAYS, SECONDS_PER_DAY

WAIT = Action("wait")  # the cloud runs until it is at rest
# The operator's recoveries, in the order that lets the old run's step meet the new run.
RECOVERIES = (Action("rerun", entity=0), Action("redrive"), WAIT)
# Express has no stop to race with: two copies of a run at once, and an operator who reruns the
# entity once it reads FAILED (`chaos.concurrent.twin_rerun`), in this many interleavings.
TWIN_RERUNS = 4
# How long before the end of its window the late recovery comes (`late_recoveries`).
LATE_MARGIN_SECONDS = 3600


def late_recoveries(*, express: bool, receives: int = 0) -> tuple[Action, ...]:
    """Time passes to an hour before the redrive window closes (14 days, also the longest SQS
    keeps a message), then the operator recovers the stopped run (`ops.redrive`); then the cloud
    runs until it is at rest. On Express the queue would run a killed run again within minutes, so
    its message is first dead-lettered (`receives`: the queue's maxReceiveCount; nobody runs it
    meanwhile, `chaos.concurrent.left_in_the_dlq`). SQS has dropped the letter by then (retention
    counts from the first send, and the receives took hours), so what recovers the run is the
    operator's restart of the entity still unfinished (`make redrive-workflow`)."""
    window = REDRIVE_WINDOW_DAYS * SECONDS_PER_DAY
    late = [Action("time-travel", seconds=window - LATE_MARGIN_SECONDS), Action("redrive"), WAIT]
    return tuple(left_in_the_dlq(late, receives) if express else late)


def races(catalogue: Catalogue) -> list[Schedule]:
    """Two worlds per (outcome, boundary of the catalogue's functions), the rerun race and the
    late recovery: the catalogue is a mutant's (`Catalogue.only`), so these are the boundaries of
    what it changed. On Express, also `TWIN_RERUNS` per outcome: its rerun race."""
    late = late_recoveries(express=catalogue.express, receives=catalogue.queue_receives)
    stopped = [
        Schedule(outcomes=(kind,), crashes=(), stops=(hit,), actions=actions)
        for kind, hits in sorted(catalogue.by_kind.items())
        for hit in hits
        if at_boundary(hit)
        for actions in (RECOVERIES, late)
    ]
    if not catalogue.express:
        return stopped
    twins = [
        Schedule(
            outcomes=(kind,), crashes=(), actions=(Action("twin-rerun", queue=WORKER_QUEUE, seed=seed), WAIT)
        )
        for kind, hits in sorted(catalogue.by_kind.items())
        if hits
        for seed in range(TWIN_RERUNS)
    ]
    return stopped + twins


class RaceDraw:
    """A search's operator races, each once, in an order drawn from its seed."""

    def __init__(self, catalogue: Catalogue, rng: random.Random) -> None:
        self._left = races(catalogue)
        rng.shuffle(self._left)

    def next(self) -> Schedule | None:
        return self._left.pop() if self._left else None
