"""Which functions each kind of action reaches, measured: what a mutant's search aims its draws at.

A mutant names the functions it patches (`Mutant.functions`); a random schedule reaches its guard
only through the actions that make those functions run again. Which ones do is not listed by
hand: one recording world per action kind places one entity of each kind, plays `FORMS` draws of
that action (`Drawer.action`, from a fixed seed: its entities, variants and queues) and recovers;
a baseline world does the same with no action. The functions that reach a point the baseline
does not (a point's occurrence counts, so a second request to the API is new) are the ones the
action reaches. `Catalogue.only` turns this into a mutant's aim (`chaos.draw`).

Measured on the Standard stage, a client's `change-body`, `retry`, `another-caller` and
`late-retry` reach `api`; `rerun` reaches `ops.rerun` and the saga; `deliver` the worker and the
consumers. A new action, function or mutant is measured with no edit.

What it changed, `python -m chaos.mutation --jobs 1`, the default budget, fresh seeds
1795800000-04, before -> after (median worlds to the catch; every one 5/5 both times):
http-payload-hash 16 -> 8 (16, 12, 50, 16, 4 -> 2, 8, 4, 16, 10), caller-scope 4 -> 2,
stranded-resend 3 -> 4. Aimed only, seeds 1795810000-04 (5/5 each): provider-reconcile 14,
fence-owner-token 13, ttl-window 7, effect-with-fence 6. Unaimed, 1 schedule in 7 held a
`change-body` and http-payload-hash was missed from one seed in five (base seed 1795724741).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from chaos.draw import ACTIONS, KINDS, Catalogue, Drawer
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_schedule
from simulator.world import reusing

FORMS = 3  # draws of each action kind per recording world (its entities, variants and queues)
SEED = 0  # the recording's draws: the same measurement every run


def record_reaches(assembly: Path, catalogue: Catalogue) -> dict[str, frozenset[str]]:
    """Each action kind -> the functions its recording world reaches beyond the baseline's."""
    drawer = Drawer(catalogue, SEED)
    rng = random.Random(SEED)  # noqa: S311 - a reproducible recording, not a secret
    with reusing():  # one moto world, reset between the recordings
        baseline = _reached(assembly, ())
        return {
            kind: frozenset(
                hit.function
                for hit in _reached(
                    assembly, tuple(drawer.action(rng, kind, len(KINDS)) for _ in range(FORMS))
                )
                - baseline
            )
            for kind in ACTIONS
        }


def _reached(assembly: Path, actions: tuple[Action, ...]) -> set[PointHit]:
    schedule = Schedule(outcomes=KINDS, crashes=(), actions=actions)
    return {PointHit.parse(label) for label in run_schedule(assembly, schedule).points}


def described(reaches: Mapping[str, frozenset[str]]) -> str:
    """`kind -> functions` for the results' header, the kinds that reach none left out."""
    return "; ".join(f"{kind}: {', '.join(sorted(fns))}" for kind, fns in reaches.items() if fns)
