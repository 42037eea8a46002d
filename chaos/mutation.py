"""The mutation score: each guard of `chaos.mutants.MUTANTS` off alone, searched until caught.

Per mutant the search runs, in order, until the first violation:
1. interleavings (`chaos.interleave`) of two attempts of every piece of work the mutant touches,
   the zombie variant included (`pairs_for`): first each pair in order, then random interleavings
   (seeded), round-robin over the pairs, up to `pair_limit` rounds;
2. random fault schedules (`chaos.schedules`, hypothesis from `seed`, faults drawn at the points
   of the functions the mutant changes), up to `random_limit`; the first violating schedule is
   shrunk by hypothesis (a bounded number of extra runs). Hypothesis plans its generation by
   `max_examples`, so the limit changes which schedules come first, not only how many: with 80,
   `transient-retried` was not caught; with 200 it was, after 41.
"Schedules needed" counts every world run before the catch, the catching one included. The
catching interleaving (pair + choices) or shrunk schedule is the mutant's reproducer, replayed
once on main (which must pass it, or the catch is not the guard's); `tests/chaos/test_mutants.py`
replays each recorded one (the quick subset in `make test`) and the same on main, which must be
clean. A mutant nothing catches is reported as such, with the reason when it is equivalent.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from chaos.interleave import STEP_ORDER, Chooser, Pair, run_interleaving
from chaos.mutants import MUTANTS, Mutant, by_name
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, queue_outputs, run_schedule, schedules
from orders.workflow import function_name

# The pair whose attempts run each function's code (every step on the workflow's happy path).
_PAIR_TARGET = {"api": "api", "worker": "worker", **{function_name(s): s for s in STEP_ORDER}}
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "mutants.json"
SHRINK_BUDGET = 12  # extra schedules hypothesis may run to shrink the first violating one
RANDOM_LIMIT = 200  # random schedules per mutant; the search stops at the first catch


@dataclass
class MutantResult:
    name: str
    guard: str
    caught: bool
    schedules: int  # worlds run until the first violation (all of the budget when not caught)
    seconds: float
    found_by: str = ""  # "pair <name> choices <trace>" or "random <schedule>"
    reproducer: dict[str, object] = field(default_factory=dict)
    violation: str = ""
    equivalent: str = ""
    issue10: str = ""
    main_violations: list[str] = field(default_factory=list)  # the reproducer replayed on main


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


def _search_pairs(
    assembly: Path,
    mutant: Mutant | None,
    pairs: Sequence[Pair],
    *,
    limit: int,
    seed: int,
    result: MutantResult,
) -> bool:
    rng = random.Random(seed)  # noqa: S311 - a reproducible search, not a secret
    for round_ in range(limit):
        for pair in pairs:
            chooser: Chooser = Chooser([]) if round_ == 0 else RandomChooser(rng)
            run = run_interleaving(assembly, pair, chooser, mutant=mutant)
            result.schedules += 1
            if run.problems:
                choices = [c for _, c in run.choices]
                result.found_by = f"pair {pair.name} choices {''.join(map(str, choices))}"
                result.reproducer = {"pair": pair.target, "late": pair.late, "choices": choices}
                result.violation = run.problems[0]
                return True
    return False


def _search_random(
    assembly: Path,
    mutant: Mutant | None,
    catalogue: Sequence[PointHit],
    *,
    limit: int,
    seed: int,
    result: MutantResult,
) -> bool:
    found: list[tuple[Schedule, str]] = []
    runs = {"before": 0, "shrink": 0}

    seen: dict[Schedule, bool] = {}

    def violates(schedule: Schedule) -> bool:
        if schedule in seen:  # the same answer for the same schedule, or hypothesis calls it flaky
            return seen[schedule]
        if found:
            runs["shrink"] += 1
            if runs["shrink"] > SHRINK_BUDGET:
                seen[schedule] = False  # the shrink budget is spent: keep the smallest found so far
                return False
        else:
            runs["before"] += 1
        verdict = run_schedule(assembly, schedule, mutant=mutant)
        if verdict.violations:
            found.append((schedule, verdict.violations[0]))
        seen[schedule] = bool(verdict.violations)
        return seen[schedule]

    try:
        smallest = find(
            schedules(catalogue, queue_outputs(assembly)),
            violates,
            settings=settings(
                max_examples=limit,
                database=None,
                deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            ),
            random=random.Random(seed),  # noqa: S311 - a reproducible search, not a secret
        )
    except NoSuchExample:
        result.schedules += runs["before"]
        return False
    except Exception:  # hypothesis gave up shrinking (flaky under a budget): the first catch stands
        if not found:
            raise
        smallest = found[0][0]
    result.schedules += runs["before"]
    violation = next(v for s, v in reversed(found) if s == smallest)
    result.found_by = f"random (shrunk, seed {seed}): {smallest.describe()}"
    result.reproducer = {"schedule": asdict(smallest)}
    result.violation = violation
    return True


def score(
    assembly: Path,
    catalogue: Sequence[PointHit],
    *,
    mutants: Sequence[Mutant] = MUTANTS,
    pair_limit: int = 6,
    random_limit: int = RANDOM_LIMIT,
    seed: int = 0,
    progress: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    results = []
    for mutant in mutants:
        started = time.monotonic()
        result = MutantResult(
            mutant.name, mutant.guard, False, 0, 0.0, equivalent=mutant.equivalent, issue10=mutant.issue10
        )
        result.caught = _search_pairs(
            assembly, mutant, pairs_for(mutant), limit=pair_limit, seed=seed, result=result
        ) or (
            bool(catalogue)
            and _search_random(
                assembly, mutant, _touching(mutant, catalogue), limit=random_limit, seed=seed, result=result
            )
        )
        if result.caught:  # the catch is the guard's only if main passes the same schedule
            result.main_violations = replay(assembly, result.reproducer, None)
        result.seconds = round(time.monotonic() - started, 1)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def _touching(mutant: Mutant, catalogue: Sequence[PointHit]) -> list[PointHit]:
    """The catalogue's points in the mutant's functions (all of them if it has none there): the
    faults that can reach the guard."""
    return [hit for hit in catalogue if mutant.applies(hit.function)] or list(catalogue)


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
    )


def replay(assembly: Path, reproducer: Mapping[str, Any], mutant: Mutant | None) -> list[str]:
    """Run a recorded reproducer (pair + choices, or a schedule) with `mutant`; its violations."""
    if "schedule" in reproducer:
        return run_schedule(assembly, schedule_from(reproducer["schedule"]), mutant=mutant).violations
    pair = Pair(str(reproducer["pair"]), late=bool(reproducer["late"]))
    return run_interleaving(assembly, pair, Chooser(list(reproducer["choices"])), mutant=mutant).problems


def load(path: Path = RESULTS_FILE) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())) if path.is_file() else []


def table(results: Sequence[MutantResult]) -> list[str]:
    """The mutant table, Markdown."""
    scored = [r for r in results if not r.equivalent]
    caught = sum(r.caught for r in scored)
    equivalent = len(results) - len(scored)
    lines = [
        f"Mutation score: {caught}/{len(scored)} guards caught"
        + (f" ({100 * caught // len(scored)} %)" if scored else "")
        + (f"; {equivalent} equivalent mutant(s) listed apart" if equivalent else ""),
        "",
        "| guard (mutant) | issue 10 | caught | schedules needed | seconds | found by (the reproducer) |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for r in results:
        verdict = "equivalent" if r.equivalent and not r.caught else ("yes" if r.caught else "**NO**")
        blind = by_name(r.name).blind if r.name in {m.name for m in MUTANTS} else ""
        how = r.found_by or (f"equivalent: {r.equivalent}" if r.equivalent else "nothing in the budget")
        if blind and not r.caught:
            how += f"; {blind}"
        if r.caught:
            how += "; main: " + (f"ALSO VIOLATES ({r.main_violations[0]})" if r.main_violations else "clean")
        old = r.issue10.split(":", 1)[0] if r.issue10 else ""
        lines.append(f"| {r.name}: {r.guard} | {old} | {verdict} | {r.schedules} | {r.seconds} | {how} |")
    return lines


def write(results: Sequence[MutantResult], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "mutants.json", out / "mutants.md"
    json_path.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    md_path.write_text("\n".join(["# Mutants: each guard off alone", "", *table(results)]) + "\n")
    return json_path, md_path


def main(argv: list[str] | None = None) -> int:
    import argparse  # noqa: PLC0415

    from chaos.run import RESULTS, quiet, say  # noqa: PLC0415
    from chaos.single import catalogue as record_catalogue  # noqa: PLC0415
    from simulator.synth import synthesize  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m chaos.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    parser.add_argument("--pair-limit", type=int, default=6, help="rounds over the pairs (6)")
    parser.add_argument(
        "--random-limit", type=int, default=RANDOM_LIMIT, help=f"random schedules per mutant ({RANDOM_LIMIT})"
    )
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--merge", action="store_true", help="keep the other mutants' recorded results")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    assembly = synthesize("local")
    with quiet():
        points = sorted({hit for hits in record_catalogue(assembly).values() for hit in hits})
        results = score(
            assembly,
            points,
            mutants=chosen,
            pair_limit=args.pair_limit,
            random_limit=args.random_limit,
            seed=args.seed,
            progress=lambda r: say(f"  {r.name}: {'caught' if r.caught else 'NOT'} after {r.schedules}"),
        )
    if args.merge:  # keep the other mutants' recorded results, in the list's order
        fresh = {r.name: r for r in results}
        kept = {r["name"]: MutantResult(**r) for r in load(args.out / "mutants.json")}
        results = [fresh.get(m.name) or kept[m.name] for m in MUTANTS if m.name in fresh or m.name in kept]
    for line in table(results):
        say(line)
    json_path, md_path = write(results, args.out)
    say(f"-> {json_path}, {md_path}")
    return 0 if all((r.caught and not r.main_violations) or r.equivalent for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
