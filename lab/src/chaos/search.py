"""One search for one mutant from one seed: worlds run until one violates with the guard off and
passes with it on, or the budget is spent.

When the mutant's functions have pairs (`chaos.pairs.pairs_for`: two attempts of each piece of
work they do, the zombie variant included), every other world is an interleaving of one of them
(`chaos.pairs.PairDraw`: pairs in proportion to the interleavings they have not run, each
interleaving once, choices drawn from the seed) until every interleaving has run, the others
random schedules (`chaos.draw.Drawer` from the seed, faults at the mutant's
functions, its actions aimed at the kinds that reach them: `Catalogue.only`, `chaos.aim`); a
mutant with no pairs (a use case, a setting, the template, the consumers) gets random schedules
only. Every `RACE_EVERY`th world, while any are left, is one of the mutant's operator races
(`chaos.races`: a stop at one of its boundaries, then a rerun and a redrive, or a recovery on the
last day; on Express also twin copies beside a rerun), each at most once, in an order drawn from
the seed: a mutant with more races than the budget has room for plays a sample. A schedule is
the same whatever the budget: the search from a seed is a
prefix of the longer one.

A world that violates with the mutant counts as a catch only when main does not show the same
violation in the same world: the guard's catch is what the mutant breaks and main does not. A
world whose every violation main shows too is a finding on main (listed), and the search goes
on. "Schedules" counts every world run up to and including the catch.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.draw import Catalogue, Drawer
from chaos.interleave import Pair, run_interleaving
from chaos.mutant import Mutant
from chaos.pairs import PairDraw, pairs_for
from chaos.points import PointHit
from chaos.races import RaceDraw
from chaos.scheduler import Chooser
from chaos.schedules import Action, Schedule, run_schedule
from chaos.shrink import shrink

PAIR_EVERY = 2  # every other world is an interleaving, while the mutant has pairs left
RACE_EVERY = 4  # every fourth world is an operator race, while the mutant has races left


@dataclass
class Catch:
    """One seed's search for one mutant."""

    seed: int
    caught: bool = False
    schedules: int = 0  # worlds run up to and including the catch (all of the budget when not caught)
    seconds: float = 0.0
    found_by: str = ""  # "pair <name> choices <trace>" or "random (seed s, schedule n): <schedule>"
    reproducer: dict[str, Any] = field(default_factory=dict)
    violation: str = ""
    main_findings: list[str] = field(default_factory=list)  # worlds main fails too: not the guard's


def search(assembly: Path, mutant: Mutant, catalogue: Catalogue, *, seed: int, budget: int) -> Catch:
    """Worlds from `seed` until a catch (the mutant violates, main does not) or `budget` worlds."""
    started = time.monotonic()
    catch = Catch(seed)
    rng = random.Random(seed)  # noqa: S311 - a reproducible search, not a secret
    pairs = PairDraw.of(pairs_for(mutant), catalogue.by_kind)
    aimed = catalogue.only(mutant.applies)
    drawer = Drawer(aimed, seed)
    operator_races = RaceDraw(aimed, random.Random(f"races-{seed}"))  # noqa: S311 - reproducible
    for world in range(1, budget + 1):
        catch.schedules = world
        pair = pairs.next(rng) if world % PAIR_EVERY == 1 else None
        race = (
            operator_races.next()
            if pair is None and aimed.function_faults and world % RACE_EVERY == 0
            else None
        )
        if pair is not None:
            chooser = pairs.trees[pair].chooser(rng)
            problems = run_interleaving(assembly, pair, chooser, mutant=mutant).problems
            pairs.trees[pair].ran(chooser.trace)
            reproducer: dict[str, Any] = {
                "pair": pair.target,
                "late": pair.late,
                "choices": [c for _, c in chooser.trace],
            }
            how = f"pair {pair.name} choices {''.join(str(c) for c in reproducer['choices'])}"
        else:
            schedule = race or drawer.draw()
            result = run_schedule(assembly, schedule, mutant=mutant)
            drawer.observe(schedule, result)
            problems = result.violations
            reproducer = {"schedule": asdict(schedule)}
            how = f"random (seed {seed}, schedule {world}): {schedule.describe()}"
        if not problems:
            continue
        on_main = replay(assembly, reproducer, None)
        guard = [v for v in problems if v not in on_main]
        if on_main:
            catch.main_findings.append(f"{how}: {on_main[0]}")
        if not guard:
            continue
        catch.caught, catch.found_by, catch.reproducer, catch.violation = True, how, reproducer, guard[0]
        break
    catch.seconds = round(time.monotonic() - started, 1)
    return catch


def shrunk(assembly: Path, mutant: Mutant, catch: Catch) -> Catch:
    """`catch` with its schedule made small (`chaos.shrink`): still violating with the mutant and
    passing on main (shrunk on the mutant alone first, and again checking main at every step if
    the smaller one fails on main); the catch as found if neither gets smaller."""
    if "schedule" not in catch.reproducer:
        return catch  # an interleaving is as small as its two attempts
    found = schedule_from(catch.reproducer["schedule"])

    def violates(schedule: Schedule) -> bool:
        return bool(run_schedule(assembly, schedule, mutant=mutant).violations)

    def caught(schedule: Schedule) -> bool:
        return violates(schedule) and not run_schedule(assembly, schedule).violations

    smallest = shrink(found, violates)
    if not caught(smallest):
        smallest = shrink(found, caught)
    violations = run_schedule(assembly, smallest, mutant=mutant).violations
    if smallest == found or not violations or run_schedule(assembly, smallest).violations:
        return catch
    how = catch.found_by.split(": ", 1)[0]
    return Catch(
        catch.seed,
        caught=True,
        schedules=catch.schedules,
        seconds=catch.seconds,
        found_by=f"{how}, shrunk: {smallest.describe()}",
        reproducer={"schedule": asdict(smallest)},
        violation=violations[0],
        main_findings=catch.main_findings,
    )


def schedule_from(data: Mapping[str, Any]) -> Schedule:
    """A recorded schedule (`dataclasses.asdict` of a `Schedule`) back as one. Reproducers
    recorded before the lab named the entity neutrally say `orders` and an action's `order`."""

    def hit(h: Mapping[str, Any]) -> PointHit:
        return PointHit(h["function"], h["point"], int(h["occurrence"]))

    def action(a: Mapping[str, Any]) -> Action:
        fields = {("entity" if name == "order" else name): value for name, value in a.items()}
        return Action(**fields)

    return Schedule(
        outcomes=tuple(data["outcomes"] if "outcomes" in data else data["orders"]),
        crashes=tuple(hit(h) for h in data["crashes"]),
        actions=tuple(action(a) for a in data["actions"]),
        errors=tuple((hit(h), str(code)) for h, code in data.get("errors", ())),
        timeouts=tuple(hit(h) for h in data.get("timeouts", ())),
        stops=tuple(hit(h) for h in data.get("stops", ())),
        gives_up=tuple(int(i) for i in data.get("gives_up", ())),
        lost=tuple(hit(h) for h in data.get("lost", ())),
    )


def replay(assembly: Path, reproducer: Mapping[str, Any], mutant: Mutant | None) -> list[str]:
    """Run a recorded reproducer (pair + choices, or a schedule) with `mutant`; its violations."""
    if "schedule" in reproducer:
        return run_schedule(assembly, schedule_from(reproducer["schedule"]), mutant=mutant).violations
    pair = Pair(str(reproducer["pair"]), late=bool(reproducer["late"]))
    return run_interleaving(assembly, pair, Chooser(list(reproducer["choices"])), mutant=mutant).problems
