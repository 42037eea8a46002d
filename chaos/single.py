"""Exhaustive single faults: one crash at each crash point of each function, and one error response
at each AWS call (each service's transient codes in turn, `chaos.points.TRANSIENT_ERRORS`), then
recovery.

The catalogue comes from a *recording run* per order kind: the same schedule with nothing armed,
every point reached recorded as (function, point, occurrence). Each catalogue entry is then a
schedule of its own on the world as it was just after the deploy (one moto world, reset between
schedules, `simulator.world`): arm that one hit, place the order, let the platform recover (client
retry, SQS redelivery after the visibility timeout, the state machine's Retry) and an operator
redrive what is left failed; then judge with `chaos.scenarios.verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cloud import chaos_cloud
from chaos.points import CrashController, PointHit, errors_at
from chaos.recovery import Recovery
from chaos.scenarios import KINDS, run_orders
from simulator.world import reusing


@dataclass
class ScheduleResult:
    """One schedule's outcome, as the report counts it."""

    category: str
    name: str
    faults: list[str]
    fired: list[str]
    violations: list[str]
    recovery: Recovery = field(default_factory=Recovery)
    points: set[str] = field(default_factory=set)
    simulated_seconds: float = 0.0  # how far the schedule moved the clock (leases, days)
    errored: list[str] = field(default_factory=list)  # AWS calls answered with an injected error

    @property
    def ok(self) -> bool:
        return not self.violations


def record(assembly: Path, kind: str, *, control: bool = False) -> list[PointHit]:
    """The crash points a clean run of one `kind` order reaches, in order (the control has its
    own: no fence, so no fence points and fewer calls)."""
    controller = CrashController()
    with chaos_cloud(assembly, controller=controller, control=control) as cloud:
        verdict = run_orders(cloud, [kind], prefix="record")
    if not verdict.ok and not control:
        raise AssertionError(f"the clean {kind} run already violates: {verdict.violations}")
    return list(controller.reached)


def catalogue(
    assembly: Path, kinds: Iterable[str] = KINDS, *, control: bool = False
) -> dict[str, list[PointHit]]:
    with reusing():
        return {kind: record(assembly, kind, control=control) for kind in kinds}


def run_single(
    assembly: Path, kind: str, hit: PointHit, *, error: str | None = None, control: bool = False
) -> ScheduleResult:
    """One `kind` order with a crash at `hit` (or, with `error`, that AWS error response there)."""
    controller = CrashController()
    if error is None:
        controller.arm([hit])
    else:
        controller.arm_errors([(hit, error)])
    with chaos_cloud(assembly, controller=controller, control=control) as cloud:
        verdict = run_orders(cloud, [kind], prefix="single")
        recovery = cloud.recovery
    violations = list(verdict.violations)
    if not (controller.fired or controller.failed):
        violations.append(f"harness: {hit.label} was never reached, so nothing was tested")
    fault = f"crash {hit.label}" if error is None else f"error {error} at {hit.label}"
    return ScheduleResult(
        category="single",
        name=f"{kind} / {fault}",
        faults=[fault],
        fired=[h.label for h in controller.fired],
        violations=violations,
        recovery=recovery,
        points={h.label for h in controller.reached},
        errored=[h.label for h, _ in controller.failed],
    )


def faults_at(hits: Sequence[PointHit], *, control: bool) -> list[tuple[PointHit, str | None]]:
    """Each hit's crash, and at each AWS call an error response too (the service's transient codes
    taken in turn along the hits, so every code is drawn; not in the control, which only shows
    what the guards prevent)."""
    faults: list[tuple[PointHit, str | None]] = []
    for index, hit in enumerate(hits):
        faults.append((hit, None))
        if hit.at_call and not control:
            codes = errors_at(hit)
            faults.append((hit, codes[index % len(codes)]))
    return faults


def run_all(
    assembly: Path,
    points: dict[str, list[PointHit]],
    *,
    control: bool = False,
    select: Callable[[str, PointHit], bool] = lambda _kind, _hit: True,
    progress: Callable[[ScheduleResult], None] | None = None,
) -> list[ScheduleResult]:
    results = []
    with reusing():  # one moto world for all the schedules, reset between them
        for kind, hits in points.items():
            for hit, error in faults_at([hit for hit in hits if select(kind, hit)], control=control):
                result = run_single(assembly, kind, hit, error=error, control=control)
                results.append(result)
                if progress is not None:
                    progress(result)
    return results
