"""One search for one mutant from one seed: worlds run until one violates with the guard off and
passes with it on, or the budget is spent.

When the mutant's functions have pairs (`pairs_for`: two attempts of each piece of work they do,
the zombie variant included), one world in `PAIR_EVERY` is an interleaving of the next pair
(round-robin in an order the seed shuffles; each choice of which attempt proceeds drawn from the
seed), the others random schedules (`chaos.draw.Drawer` from the seed, faults at the mutant's
functions); a mutant with no pairs (a use case, a setting, the template, the consumers) gets
random schedules only. A schedule is the same whatever the budget: the search from a seed is a
prefix of the longer one.

A world that violates with the mutant counts as a catch only when main passes the same world:
one that main fails too is a finding on main (listed), and the search goes on. "Schedules" counts
every world run up to and including the catch.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.draw import Catalogue, Drawer
from chaos.interleave import STEP_ORDER, Chooser, Pair, run_interleaving
from chaos.mutants import Mutant
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_schedule
from chaos.shrink import shrink
from orders.workflow import function_name

# The pair whose attempts run each function's code (every step on the workflow's happy path).
_PAIR_TARGET = {"api": "api", "worker": "worker", **{function_name(s): s for s in STEP_ORDER}}
PAIR_EVERY = 3  # one world in three is an interleaving (when the mutant has pairs)


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


def pairs_for(mutant: Mutant) -> list[Pair]:
    """Two attempts of each piece of work the mutant's functions do. None for a mutant of a use
    case, a setting or the template: those guards act across runs, days and operators, which
    two concurrent attempts of one piece of work never reach."""
    if mutant.runtime is not None or mutant.template is not None:
        return []
    targets = sorted(
        {_PAIR_TARGET[f] for f in mutant.functions if f in _PAIR_TARGET},
        key=("api", "worker", *STEP_ORDER).index,
    )
    return [Pair(t, late=late) for t in targets for late in (False, True)]


class RandomChooser(Chooser):
    """Picks among the enabled attempts at random (seeded): a budget of interleavings samples the
    whole tree instead of the depth-first search's last few choices."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__([])
        self._rng = rng

    def __call__(self, enabled: list[int]) -> int:
        pick = self._rng.choice(enabled)
        self.trace.append((list(enabled), pick))
        return pick


def search(assembly: Path, mutant: Mutant, catalogue: Catalogue, *, seed: int, budget: int) -> Catch:
    """Worlds from `seed` until a catch (the mutant violates, main does not) or `budget` worlds."""
    started = time.monotonic()
    catch = Catch(seed)
    rng = random.Random(seed)  # noqa: S311 - a reproducible search, not a secret
    pairs = pairs_for(mutant)
    rng.shuffle(pairs)
    drawer = Drawer(catalogue.only(mutant.applies), seed)
    for world in range(1, budget + 1):
        catch.schedules = world
        if pairs and world % PAIR_EVERY == 1:
            pair = pairs[(world // PAIR_EVERY) % len(pairs)]
            chooser = RandomChooser(rng)
            problems = run_interleaving(assembly, pair, chooser, mutant=mutant).problems
            reproducer: dict[str, Any] = {
                "pair": pair.target,
                "late": pair.late,
                "choices": [c for _, c in chooser.trace],
            }
            how = f"pair {pair.name} choices {''.join(str(c) for c in reproducer['choices'])}"
        else:
            schedule = drawer.draw()
            result = run_schedule(assembly, schedule, mutant=mutant)
            drawer.observe(schedule, result)
            problems = result.violations
            reproducer = {"schedule": asdict(schedule)}
            how = f"random (seed {seed}, schedule {world}): {schedule.describe()}"
        if not problems:
            continue
        on_main = replay(assembly, reproducer, None)
        if on_main:
            catch.main_findings.append(f"{how}: {on_main[0]}")
            continue
        catch.caught, catch.found_by, catch.reproducer, catch.violation = True, how, reproducer, problems[0]
        break
    catch.seconds = round(time.monotonic() - started, 1)
    return catch


def shrunk(assembly: Path, mutant: Mutant, catch: Catch) -> Catch:
    """`catch` with its schedule made small (`chaos.shrink`: still violating with the mutant), if
    main still passes the smaller one (else the catch as found)."""
    if "schedule" not in catch.reproducer:
        return catch  # an interleaving is as small as its two attempts
    found = schedule_from(catch.reproducer["schedule"])
    smallest = shrink(found, lambda s: bool(run_schedule(assembly, s, mutant=mutant).violations))
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
    """A recorded schedule (`dataclasses.asdict` of a `Schedule`) back as one."""

    def hit(h: Mapping[str, Any]) -> PointHit:
        return PointHit(h["function"], h["point"], int(h["occurrence"]))

    return Schedule(
        orders=tuple(data["orders"]),
        crashes=tuple(hit(h) for h in data["crashes"]),
        actions=tuple(Action(**a) for a in data["actions"]),
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
