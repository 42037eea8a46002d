"""The mutation score: each guard of `chaos.mutants.MUTANTS` off alone, searched from fresh seeds.

Each mutant is searched (`chaos.search`) from `--seeds` seeds (5) derived from one base seed
(`--seed`; by default the time, printed, so a run can be replayed), each search with the same
budget of worlds (`--budget`), whatever the mutant. The score is each mutant's catch rate: the
seeds whose search caught it within the budget (a world that violates with the guard off and
passes on main), and the median number of worlds it took. A search that needs its seed or its
budget handed to it has not found the bug: the run exits 1 unless every mutant that is not
declared equivalent is caught from every seed. An equivalent mutant is searched from the first
seed only, its whole budget, and listed apart; a catch refutes its declaration (a world tells it
apart), and the run exits 1 for it too.

Each search's random schedules are aimed at what its mutant changed (`chaos.draw`, "aimed"): the
action kinds whose runs reach the mutant's functions, measured once per run (`chaos.aim`) and
written in the results' header, are drawn first; the same budget and the same draw for every
mutant, nothing listed per mutant.

The first seed's catch (or the first that caught) is shrunk (`chaos.shrink`, still caught, main
clean where it can be) and recorded as the mutant's reproducer, with what main does with it;
`tests/chaos/test_mutants.py` replays each recorded one (the quick subset in `make test`) and the
same on main, which must not show the violation the mutant does.

    python -m chaos.mutation                         # every mutant, 5 fresh seeds, the default budget
    python -m chaos.mutation --seed 1732000000       # replay a run (its base seed is printed)
    python -m chaos.mutation --only reconcile-off:<LeasedStep> --seeds 20
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from chaos.aim import described, record_reaches
from chaos.draw import Catalogue
from chaos.mutant import Mutant
from chaos.mutants import MUTANTS, by_name
from chaos.search import Catch, replay, search, shrunk
from emulator import project

RESULTS_FILE = project.results("chaos") / "mutants.json"
SEEDS = 5  # fresh seeds per mutant
# Guards an Express stage does not have, so no mutant of theirs to catch there: why.
NOT_ON_EXPRESS = {
    "execution-name": "Express dedupes no names: the fences make its copies of a run harmless",
}
BUDGET = 100  # worlds per search (interleavings and random schedules), the same for every mutant

__all__ = ["BUDGET", "RESULTS_FILE", "SEEDS", "MutantResult", "load", "main", "replay", "summarize", "table"]


@dataclass
class MutantResult:
    """A mutant's searches, one per seed, and the reproducer recorded for it."""

    name: str
    guard: str
    equivalent: str = ""
    issue10: str = ""
    catches: list[Catch] = field(default_factory=list)
    found_by: str = ""  # the recorded reproducer, as found (and shrunk)
    reproducer: dict[str, Any] = field(default_factory=dict)
    violation: str = ""
    main_violations: list[str] = field(default_factory=list)  # the reproducer replayed on main

    @property
    def caught(self) -> bool:
        """Caught from every seed searched (the catch rate is 100 %)."""
        return bool(self.catches) and all(c.caught for c in self.catches)

    @property
    def rate(self) -> tuple[int, int]:
        return sum(c.caught for c in self.catches), len(self.catches)

    @property
    def median(self) -> float | None:
        """The median number of worlds to the catch, over the seeds that caught it."""
        caught = [c.schedules for c in self.catches if c.caught]
        return statistics.median(caught) if caught else None

    @property
    def refuted(self) -> bool:
        """Declared equivalent, yet a search caught it: a world tells it apart."""
        return bool(self.equivalent) and any(c.caught for c in self.catches)

    @property
    def passes(self) -> bool:
        return not self.refuted if self.equivalent else self.caught

    def as_dict(self) -> dict[str, Any]:
        rate = self.rate
        return {
            "name": self.name,
            "guard": self.guard,
            "caught": self.caught,
            "catch_rate": f"{rate[0]}/{rate[1]}",
            "median_schedules": self.median,
            "schedules": [c.schedules for c in self.catches],
            "seconds": round(sum(c.seconds for c in self.catches), 1),
            "found_by": self.found_by,
            "reproducer": self.reproducer,
            "violation": self.violation,
            "main_violations": self.main_violations,
            "equivalent": self.equivalent,
            "issue10": self.issue10,
            "searches": [asdict(c) for c in self.catches],
        }


def seeds_of(base: int, count: int) -> list[int]:
    return [base + k for k in range(count)]


def summarize(mutants: Sequence[Mutant], catches: dict[str, list[Catch]]) -> list[MutantResult]:
    """Each mutant's searches (in seed order) as its result; the reproducer left to `record`."""
    results = []
    for mutant in mutants:
        result = MutantResult(mutant.name, mutant.guard, mutant.equivalent, mutant.issue10)
        result.catches = sorted(catches.get(mutant.name, []), key=lambda c: c.seed)
        results.append(result)
    return results


def exit_code(results: Sequence[MutantResult]) -> int:
    """0 only when every mutant not declared equivalent was caught from every seed, and no mutant
    declared equivalent was caught."""
    return 0 if results and all(r.passes for r in results) else 1


# --- the run: (mutant, seed) searches on worker processes ---------------------------------------
_world = ExitStack()


def _start_worker() -> None:
    """Each worker process keeps one moto world for all its searches (`simulator.world.reusing`)."""
    from chaos.run import quiet  # noqa: PLC0415
    from simulator.world import reusing  # noqa: PLC0415

    _world.enter_context(quiet())
    _world.enter_context(reusing())


def _search_job(job: tuple[Path, str, Catalogue, int, int]) -> tuple[str, Catch]:
    assembly, name, catalogue, seed, budget = job
    return name, search(assembly, by_name(name), catalogue, seed=seed, budget=budget)


def _shrink_job(job: tuple[Path, str, Catch]) -> tuple[str, Catch, list[str]]:
    assembly, name, catch = job
    small = shrunk(assembly, by_name(name), catch)
    return name, small, replay(assembly, small.reproducer, None)


def run(
    assembly: Path,
    catalogue: Catalogue,
    mutants: Sequence[Mutant],
    *,
    seeds: Sequence[int],
    budget: int,
    jobs: int,
    progress: Callable[[str, Catch], None] | None = None,
) -> list[MutantResult]:
    """Every (mutant, seed) search, spread over `jobs` processes; then each mutant's reproducer."""
    work = [
        (assembly, m.name, catalogue, seed, budget)
        for m in mutants
        for seed in (seeds[:1] if m.equivalent else seeds)
    ]
    work.sort(key=lambda w: not by_name(w[1]).equivalent)  # the longest first
    catches: dict[str, list[Catch]] = {}
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker) as pool:
        for name, catch in pool.map(_search_job, work):
            catches.setdefault(name, []).append(catch)
            if progress is not None:
                progress(name, catch)
        results = summarize(mutants, catches)
        firsts = {
            r.name: next(c for c in r.catches if c.caught)
            for r in results
            if any(c.caught for c in r.catches)
        }
        shrinking = [(assembly, name, catch) for name, catch in firsts.items()]
        for name, small, on_main in pool.map(_shrink_job, shrinking):
            result = next(r for r in results if r.name == name)
            result.found_by, result.reproducer, result.violation = (
                small.found_by,
                small.reproducer,
                small.violation,
            )
            result.main_violations = on_main
    return results


# --- the table --------------------------------------------------------------------------------
def load(path: Path = RESULTS_FILE) -> list[dict[str, Any]]:
    data = json.loads(path.read_text()) if path.is_file() else {}
    return list(data.get("mutants", [])) if isinstance(data, dict) else list(data)


def table(results: Sequence[MutantResult]) -> list[str]:
    """The mutant table, Markdown."""
    scored = [r for r in results if not r.equivalent]
    caught = sum(r.caught for r in scored)
    refuted = sum(r.refuted for r in results)
    equivalent = len(results) - len(scored) - refuted
    lines = [
        f"Mutation score: {caught}/{len(scored)} guards caught from every seed"
        + (f" ({100 * caught // len(scored)} %)" if scored else "")
        + (f"; {equivalent} equivalent mutant(s) listed apart" if equivalent else "")
        + (f"; {refuted} declared equivalent yet caught (the declaration is refuted)" if refuted else ""),
        "",
        "| guard (mutant) | issue 10 | catch rate | median worlds to catch | worlds per seed | seconds "
        "| found by (the reproducer, shrunk) |",
        "| --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for r in results:
        rate = f"{r.rate[0]}/{r.rate[1]}"
        if r.refuted:
            rate = f"**refuted equivalent ({rate})**"
        elif r.equivalent:
            rate = f"equivalent ({rate})"
        elif not r.caught:
            rate = f"**{rate}**"
        how = r.found_by or (f"equivalent: {r.equivalent}" if r.equivalent else "nothing in the budget")
        blind = by_name(r.name).blind if r.name in {m.name for m in MUTANTS} else ""
        if blind and not r.caught:
            how += f"; {blind}"
        findings = [f for c in r.catches for f in c.main_findings]
        if findings:
            how += f"; main fails {len(findings)} world(s) too (findings, not catches): {findings[0]}"
        old = r.issue10.split(":", 1)[0] if r.issue10 else ""
        median = "-" if r.median is None else f"{r.median:g}"
        per_seed = ", ".join(str(c.schedules) + ("" if c.caught else "*") for c in r.catches)
        seconds = round(sum(c.seconds for c in r.catches), 1)
        lines.append(f"| {r.name}: {r.guard} | {old} | {rate} | {median} | {per_seed} | {seconds} | {how} |")
    lines += ["", "`*`: not caught within the budget from that seed."]
    return lines


def write(
    results: Sequence[MutantResult],
    out: Path,
    *,
    command: str,
    seeds: Sequence[int],
    budget: int,
    reaches: Mapping[str, frozenset[str]],
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "mutants.json", out / "mutants.md"
    document = {
        "command": command,
        "seeds": list(seeds),
        "budget": budget,
        "reaches": {kind: sorted(functions) for kind, functions in reaches.items()},
        "mutants": [r.as_dict() for r in results],
    }
    json_path.write_text(json.dumps(document, indent=2) + "\n")
    header = [
        "# Mutants: each guard off alone, searched from fresh seeds",
        "",
        f"`{command}`: seeds {', '.join(map(str, seeds))}, a budget of {budget} worlds per search "
        "(interleavings and random schedules), the same for every mutant.",
        "",
        "Each search's random schedules are aimed at its mutant's functions (`chaos.draw`, `chaos.aim`): "
        "the action kinds that reach them are in every swarm and drawn first. What each kind reached "
        f"in its recording world, measured by this run: {described(reaches)}.",
        "",
    ]
    md_path.write_text("\n".join([*header, *table(results)]) + "\n")
    return json_path, md_path


def main(argv: list[str] | None = None) -> int:
    import argparse  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from chaos.run import STAGES, quiet, results_dir, say  # noqa: PLC0415
    from chaos.single import catalogue as record_catalogue  # noqa: PLC0415
    from chaos.single import record_operators  # noqa: PLC0415
    from emulator.synth import synthesize  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m chaos.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    parser.add_argument("--seed", type=int, default=None, help="the base seed (default: the time, printed)")
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"fresh seeds per mutant ({SEEDS})")
    parser.add_argument("--budget", type=int, default=BUDGET, help=f"worlds per search ({BUDGET})")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--out", type=Path, default=None, help="default results/chaos (Express: .../express)")
    parser.add_argument("--workflow", choices=sorted(STAGES), default="standard", help="the stage's type")
    args = parser.parse_args(argv)
    args.out = args.out or results_dir(args.workflow)
    base = int(time.time()) if args.seed is None else args.seed
    seeds = seeds_of(base, args.seeds)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(
        ["python -m chaos.mutation", *given, *([] if args.seed is not None else ["--seed", str(base)])]
    )
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    if args.workflow == "express":
        for mutant in [m for m in chosen if m.name in NOT_ON_EXPRESS]:
            say(f"  {mutant.name}: not searched on Express ({NOT_ON_EXPRESS[mutant.name]})")
        chosen = [m for m in chosen if m.name not in NOT_ON_EXPRESS]
    say(f"mutation search: base seed {base} (seeds {seeds[0]}..{seeds[-1]}), budget {args.budget}")
    say(f"  replay: {command}")
    started = time.monotonic()
    assembly = synthesize(STAGES[args.workflow])
    with quiet():
        # the tools' calls too: a guard that lives in a tool is reached by lost answers there
        catalogue = Catalogue.of(assembly, record_catalogue(assembly), record_operators(assembly))
        catalogue = replace(catalogue, reaches=record_reaches(assembly, catalogue))
    say(f"  what each action reaches (the searches' aim): {described(catalogue.reaches)}")

    def progress(name: str, catch: Catch) -> None:
        verdict = f"caught after {catch.schedules}" if catch.caught else f"NOT caught in {catch.schedules}"
        say(f"  {name} seed {catch.seed}: {verdict} ({catch.seconds} s; {time.monotonic() - started:.0f} s)")

    results = run(
        assembly, catalogue, chosen, seeds=seeds, budget=args.budget, jobs=args.jobs, progress=progress
    )
    for line in table(results):
        say(line)
    json_path, md_path = write(
        results, args.out, command=command, seeds=seeds, budget=args.budget, reaches=catalogue.reaches
    )
    say(f"-> {json_path}, {md_path} ({time.monotonic() - started:.0f} s)")
    return exit_code(results)


if __name__ == "__main__":
    raise SystemExit(main())
