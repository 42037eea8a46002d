"""`python -m chaos`: the large run behind `make chaos`; writes chaos/results/report.{json,md}.

    python -m chaos                                  # everything, defaults below
    python -m chaos --random 1000 --seed 7           # a larger random set on demand
    python -m chaos --quick                          # a few of each, for a smoke run

Exit status 1 when the real run has an invariant violation, the control found none, or a crash
point was never exercised.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from chaos.control import UnfencedRuntime  # noqa: F401 - imported early: fail fast if it breaks
from chaos.interleave import PAIRS, Pair, explore
from chaos.points import PointHit
from chaos.report import Report
from chaos.schedules import run_random
from chaos.single import ScheduleResult, catalogue, run_all

RESULTS = Path(__file__).resolve().parent / "results"
CONTROL_PAIRS = (Pair("ChargePayment", late=True), Pair("PublishEvents", late=True))
QUICK_PAIRS = (Pair("MarkCompleted"), Pair("api"))


def _every(_kind: str, _hit: PointHit) -> bool:
    return True


def _after_points(_kind: str, hit: PointHit) -> bool:
    return hit.point.startswith("after:")


def _quick_points(_kind: str, hit: PointHit) -> bool:
    return (
        hit.occurrence == 1 and hit.point.startswith("after:") and hit.function in ("api", "charge-payment")
    )


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The functions log and flush EMF metrics to stdout on every invocation, and moto logs every
    failed execution: thousands of lines nobody reads. Progress goes to stderr."""
    from orders.observability import logger  # noqa: PLC0415

    logger.setLevel("CRITICAL")
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore")
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        yield


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=300, help="random multi-fault schedules (300)")
    parser.add_argument("--control-random", type=int, default=60, help="random schedules in the control (60)")
    parser.add_argument("--seed", type=int, default=20261122, help="hypothesis seed")
    parser.add_argument("--interleavings", type=int, default=None, help="limit per pair (default: all)")
    parser.add_argument("--quick", action="store_true", help="a few of each (smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from tests.support.synth import synthesize  # noqa: PLC0415 - synthesizes `local` if stale

    started = time.monotonic()
    given = sys.argv[1:] if argv is None else argv
    command = "make chaos" + (f" CHAOS_ARGS='{' '.join(given)}'" if given else "")
    assembly = synthesize("local")
    with quiet():
        say("recording crash points ...")
        points = catalogue(assembly)
        report = Report(command=command, seed=args.seed, catalogue=points)
        every = sorted({hit for hits in points.values() for hit in hits})
        say(f"  {len(every)} crash points in {len({h.function for h in every})} functions")

        def tick(section: str) -> Callable[[ScheduleResult], None]:
            def progress(result: ScheduleResult) -> None:
                target = getattr(report, section)
                target.add(result)
                if section != "control":
                    report.exercised.update(result.fired)
                if target.schedules % 25 == 0:
                    say(f"  {section}: {target.schedules} schedules, {len(target.violations)} violations")

            return progress

        quick = args.quick
        say("single faults: one crash at each point, then recovery ...")
        run_all(assembly, points, select=_quick_points if quick else _every, progress=tick("single"))
        examples = 5 if quick else args.random
        say(f"random multi-fault schedules ({examples}) ...")
        run_random(assembly, every, examples=examples, seed=args.seed, progress=tick("random"))
        say("interleavings ...")
        for pair in QUICK_PAIRS if quick else PAIRS:
            result = explore(assembly, pair, limit=args.interleavings)
            report.add_pair(result, zombie=pair.late)
            say(f"  {pair.name}: {result.interleavings} interleavings, {len(result.violations)} violations")

        say("control: fences, HTTP idempotency and dedup off ...")
        control_points = catalogue(assembly, control=True)
        control_every = sorted({hit for hits in control_points.values() for hit in hits})
        run_all(
            assembly,
            control_points,
            control=True,
            select=_quick_points if quick else _after_points,
            progress=tick("control"),
        )
        run_random(
            assembly,
            control_every,
            examples=5 if quick else args.control_random,
            seed=args.seed,
            control=True,
            progress=tick("control"),
        )
        for pair in CONTROL_PAIRS:
            result = explore(assembly, pair, control=True, limit=10 if quick else args.interleavings)
            report.control.add_pair(result)
            found = len(result.violations)
            say(f"  control {pair.name}: {result.interleavings} interleavings, {found} violations")
        report.wall_seconds = time.monotonic() - started
        json_path, md_path = report.write(args.out)
    data = report.as_dict()
    say(
        f"{data['invariant_violations']} invariant violations, {data['control_violations']} in the control; "
        f"crash points {data['crash_points']['exercised']}/{data['crash_points']['points']}; "
        f"{data['interleavings']['total']} interleavings; {data['wall_seconds']} s -> {json_path}, {md_path}"
    )
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
