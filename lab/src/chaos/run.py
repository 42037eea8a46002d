"""The large run behind `make chaos` (`python -m chaos`); writes results/chaos/report.{json,md}.

    python -m chaos                                  # everything, defaults below
    python -m chaos --random 1000 --seed 7           # a larger random set on demand
    python -m chaos --quick                          # a few of each, for a smoke run
    python -m chaos --workflow express               # on an Express stage (make chaos WORKFLOW=express)

Exit status 1 when the real run has an invariant violation, the control found none, a crash
point was never exercised, or a call's answer was never lost.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chaos.control import unfenced_runtime  # noqa: F401 - imported early: fail fast if it breaks
from chaos.draw import Catalogue
from chaos.interleave import PAIRS, Pair, PairResult, explore
from chaos.points import PointHit
from chaos.report import Report
from chaos.schedules import run_random
from chaos.single import ScheduleResult, catalogue, record_operators, run_all
from emulator import project
from ops.service import service
from reliability.declaration import function_name

Points = dict[str, list[PointHit]]
RESULTS = project.results("chaos")
# The stage each workflow type is searched on (cdk.json), and where its results go.
STAGES = {"standard": "local", "express": "local-express"}


def results_dir(workflow: str) -> Path:
    return RESULTS if workflow == "standard" else RESULTS / workflow


_DECLARED = service()
_LEASED = tuple(s.name for s in _DECLARED.steps if s.kind == "leased")
# The control's zombies: a late copy of each leased step (its external effect, unfenced, repeats).
CONTROL_PAIRS = tuple(Pair(step, late=True) for step in _LEASED)
# The quick subset: the happy path's last step and the API.
QUICK_PAIRS = (Pair(_DECLARED.happy_path()[-1]), Pair("api"))
_QUICK_FUNCTIONS = frozenset({"api", *(function_name(step) for step in _LEASED[:1])})


def _every(_kind: str, _hit: PointHit) -> bool:
    return True


def _after_points(_kind: str, hit: PointHit) -> bool:
    return hit.point.startswith("after:")


def _quick_points(_kind: str, hit: PointHit) -> bool:
    return hit.occurrence == 1 and hit.point.startswith("after:") and hit.function in _QUICK_FUNCTIONS


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The functions log and flush EMF metrics to stdout on every invocation, and moto logs every
    failed execution: thousands of lines nobody reads. Progress goes to stderr."""
    from reliability.observability import logger  # noqa: PLC0415

    logger.setLevel("CRITICAL")
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore")
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        yield


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    """One independent piece of the run (its own moto worlds), so `--jobs` can spread them."""

    kind: str  # single | random | pair | control-single | control-random | control-pair
    assembly: Path
    quick: bool = False
    examples: int = 0
    seed: int = 0
    pair: Pair | None = None
    limit: int | None = None
    points: tuple[tuple[str, tuple[PointHit, ...]], ...] = ()
    operator_calls: tuple[PointHit, ...] = ()  # the operator tools' calls (lost answers only)


def _run_job(job: Job) -> tuple[Job, list[ScheduleResult], PairResult | None, float]:
    """Run one job (and time it); a harness error comes back as a violating result, never as a
    lost run."""
    started = time.monotonic()
    try:
        return (*_run_job_body(job), time.monotonic() - started)
    except Exception as error:  # noqa: BLE001 - reported in the run, which then fails
        name = job.pair.name if job.pair else job.kind
        failure = ScheduleResult(job.kind, name, [], [], [f"harness error: {type(error).__name__}: {error}"])
        return job, [failure], None, time.monotonic() - started


def _run_job_body(job: Job) -> tuple[Job, list[ScheduleResult], PairResult | None]:
    with quiet():
        points = {kind: list(hits) for kind, hits in job.points}
        control = job.kind.startswith("control")
        if job.kind in ("single", "control-single"):
            select = _quick_points if job.quick else (_after_points if control else _every)
            operators = job.operator_calls[:1] if job.quick else job.operator_calls
            results = run_all(job.assembly, points, control=control, select=select, operator_calls=operators)
            return job, results, None
        if job.kind in ("random", "control-random"):
            drawn_from = Catalogue.of(job.assembly, points, job.operator_calls)
            results = run_random(
                job.assembly, drawn_from, examples=job.examples, seed=job.seed, control=control
            )
            return job, results, None
        if job.pair is None:
            raise ValueError(f"job {job.kind} needs a pair")
        return job, [], explore(job.assembly, job.pair, control=control, limit=job.limit)


def _jobs(
    args: argparse.Namespace,
    assembly: Path,
    points: Points,
    control_points: Points,
    operator_calls: tuple[PointHit, ...] = (),
) -> list[Job]:
    quick = args.quick
    real = tuple((kind, tuple(hits)) for kind, hits in points.items())
    control = tuple((kind, tuple(hits)) for kind, hits in control_points.items())
    examples = 5 if quick else args.random
    chunks = max(1, min(args.jobs, examples))
    sizes = [examples // chunks + (i < examples % chunks) for i in range(chunks)]
    control_examples = 5 if quick else args.control_random
    control_limit = 10 if quick else args.interleavings
    pairs = QUICK_PAIRS if quick else PAIRS
    # the longest first, so the pool's processes finish at about the same time
    return [
        *(
            Job("random", assembly, quick, n, args.seed + i, points=real, operator_calls=operator_calls)
            for i, n in enumerate(sizes)
        ),
        *(Job("pair", assembly, quick, pair=p, limit=args.interleavings) for p in pairs),
        *(Job("single", assembly, quick, points=((kind, hits),)) for kind, hits in real),
        Job("single", assembly, quick, operator_calls=operator_calls),
        Job("control-single", assembly, quick, points=control),
        Job("control-random", assembly, quick, control_examples, args.seed, points=control),
        *(Job("control-pair", assembly, quick, pair=p, limit=control_limit) for p in CONTROL_PAIRS),
    ]


def _collect(
    report: Report, job: Job, results: list[ScheduleResult], pair_result: PairResult | None, seconds: float
) -> None:
    """One job's results into the report's section for them."""
    if job.kind.startswith("control"):
        section = report.control
    elif job.kind == "pair":
        section = report.zombies if job.pair is not None and job.pair.late else report.concurrency
    else:
        section = report.single if job.kind == "single" else report.random
    section.seconds += seconds
    for result in results:
        section.add(result)
        if not job.kind.startswith("control"):
            report.exercised.update(result.fired)
            report.errored.update(result.errored)
            report.lost.update(result.lost)
    if pair_result is not None:
        if job.kind == "control-pair":
            report.control.add_pair(pair_result)
        else:
            report.add_pair(pair_result, zombie=bool(job.pair and job.pair.late))


def make_command(given: list[str]) -> str:
    """The `make chaos` line that runs these arguments: `--workflow` is the Makefile's WORKFLOW=
    (it reaches both halves), the rest its CHAOS_ARGS."""
    workflow = ""
    if "--workflow" in given:
        at = given.index("--workflow")
        workflow, given = given[at + 1], given[:at] + given[at + 2 :]
    line = "make chaos" + (f" WORKFLOW={workflow}" if workflow else "")
    return line + (f" CHAOS_ARGS='{' '.join(given)}'" if given else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=300, help="random multi-fault schedules (300)")
    parser.add_argument("--control-random", type=int, default=60, help="random schedules in the control (60)")
    parser.add_argument(
        "--seed", type=int, default=20261122, help="the random schedules' seed (chunk i uses seed + i)"
    )
    parser.add_argument("--interleavings", type=int, default=None, help="limit per pair (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--quick", action="store_true", help="a few of each (smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="default results/chaos (Express: .../express)")
    parser.add_argument("--workflow", choices=sorted(STAGES), default="standard", help="the stage's type")
    args = parser.parse_args(argv)
    args.out = args.out or results_dir(args.workflow)

    from emulator.synth import synthesize  # noqa: PLC0415 - synthesizes `local` if stale

    started = time.monotonic()
    given = list(sys.argv[1:] if argv is None else argv)
    command = make_command(given)
    assembly = synthesize(STAGES[args.workflow])
    with quiet():
        say("recording crash points ...")
        points = catalogue(assembly)
        control_points = catalogue(assembly, control=True)
        operator_calls = tuple(record_operators(assembly))
    report = Report(command=command, seed=args.seed, catalogue=points, operator_calls=list(operator_calls))
    every = sorted({hit for hits in points.values() for hit in hits})
    say(
        f"  {len(every)} crash points in {len({h.function for h in every})} functions; "
        f"{len(operator_calls)} operator tool calls"
    )
    jobs = _jobs(args, assembly, points, control_points, operator_calls)
    say(f"{len(jobs)} jobs on {args.jobs} worker process(es) ...")
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        for job, results, pair_result, seconds in pool.map(_run_job, jobs):
            _collect(report, job, results, pair_result, seconds)
            label = job.pair.name if job.pair else f"{len(results)} schedules"
            found = len(pair_result.violations) if pair_result else sum(len(r.violations) for r in results)
            count = f"{pair_result.interleavings} interleavings, " if pair_result else ""
            say(f"  {job.kind} {label}: {count}{found} violations ({time.monotonic() - started:.0f} s)")
    report.wall_seconds = time.monotonic() - started
    json_path, md_path = report.write(args.out)
    data = report.as_dict()
    say(
        f"{data['invariant_violations']} invariant violations, {data['control_violations']} in the control; "
        f"crash points {data['crash_points']['exercised']}/{data['crash_points']['points']}; answers lost "
        f"{data['crash_points']['answers_lost']}/{data['crash_points']['answers']}; "
        f"{data['interleavings']['total']} interleavings; {data['wall_seconds']} s, "
        f"{data['schedules_per_minute']} schedules per minute -> {json_path}, {md_path}"
    )
    return 0 if report.ok else 1
