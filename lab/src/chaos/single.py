"""Exhaustive single faults: one crash at each crash point of each function, one error response
at each AWS call (each service's transient codes in turn, `chaos.points.TRANSIENT_ERRORS`), and
one lost answer at each AWS call (it lands, its answer is lost, the SDK sends it again), then
recovery; and one lost answer at each call an operator tool makes (`record_operators`).

The catalogue comes from a *recording run* per outcome kind: the same schedule with nothing armed,
every point reached recorded as (function, point, occurrence). Each catalogue entry is then a
schedule of its own on the world as it was just after the deploy (one moto world, reset between
schedules, `simulator.world`): arm that one hit, place the request, let the platform recover (client
retry, SQS redelivery after the visibility timeout, the state machine's Retry) and an operator
redrive what is left failed; then judge with `chaos.scenarios.verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cloud import ChaosCloud, chaos_cloud
from chaos.points import CrashController, PointHit, errors_at
from chaos.recovery import Recovery
from chaos.scenarios import FAILING, KINDS, OUTCOMES, Placed, place, run_requests, verdict
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
    lost: list[str] = field(default_factory=list)  # AWS calls whose first answer was lost (resent)
    drawn: list[str] = field(default_factory=list)  # the kinds of fault the schedule drew

    @property
    def ok(self) -> bool:
        return not self.violations


# Who answers for an operator tool's calls, as the crash controller names them.
OPERATOR_TOOLS = ("ops.rerun", "ops.redrive")


def record(assembly: Path, kind: str, *, control: bool = False) -> list[PointHit]:
    """The crash points a clean run of one `kind` request reaches, in order (the control has its
    own: no fence, so no fence points and fewer calls)."""
    controller = CrashController()
    with chaos_cloud(assembly, controller=controller, control=control) as cloud:
        judged = run_requests(cloud, [kind], prefix="record")
    if not judged.ok and not control:
        raise AssertionError(f"the clean {kind} run already violates: {judged.violations}")
    return [hit for hit in controller.reached if hit.function not in OPERATOR_TOOLS]


def catalogue(
    assembly: Path, kinds: Iterable[str] = KINDS, *, control: bool = False
) -> dict[str, list[PointHit]]:
    with reusing():
        return {kind: record(assembly, kind, control=control) for kind in kinds}


def operators_at_work(cloud: ChaosCloud) -> list[Placed]:
    """Every operator tool at work on one world: a request of the outcome that fails furthest
    along (`FAILING`: the sample's declined payment) whose execution an operator stops (redriven
    by `recover`, it ends FAILED), `make rerun` of it (run 2), a message for a run nobody decided
    on (dead-lettered by the worker) and a DLQ redrive."""
    cloud.stop_during(OUTCOMES[FAILING].steps[0], when="after")
    placed = place(cloud, FAILING, f"operators-0-{FAILING}")
    cloud.recover()
    if placed.entity_id is not None:
        cloud.rerun_entity(placed.entity_id)
        cloud.send_next_run(placed.entity_id)
    cloud.rest()
    cloud.redrive_dlqs()
    cloud.recover()
    return [placed]


def record_operators(assembly: Path) -> list[PointHit]:
    """The calls the operator tools make in `operators_at_work`: where a lost answer is drawn
    (`after:` points of `OPERATOR_TOOLS`)."""
    controller = CrashController()
    with reusing(), chaos_cloud(assembly, controller=controller) as cloud:
        judged = verdict(cloud, operators_at_work(cloud))
    if not judged.ok:
        raise AssertionError(f"the operators' clean run already violates: {judged.violations}")
    return [h for h in controller.reached if h.function in OPERATOR_TOOLS and h.point.startswith("after:")]


def run_operator_lost(assembly: Path, hit: PointHit) -> ScheduleResult:
    """`operators_at_work` with the answer of one operator call lost (the SDK resends it)."""
    controller = CrashController()
    controller.arm_lost([hit])
    with chaos_cloud(assembly, controller=controller) as cloud:
        judged = verdict(cloud, operators_at_work(cloud))
        recovery = cloud.recovery
    violations = list(judged.violations)
    if not controller.lost_fired:
        violations.append(f"harness: {hit.label} was never reached, so nothing was tested")
    fault = f"answer lost at {hit.label}"
    return ScheduleResult(
        category="single",
        name=f"operators / {fault}",
        faults=[fault],
        fired=[],
        violations=violations,
        recovery=recovery,
        points={h.label for h in controller.reached},
        lost=[h.label for h in controller.lost_fired],
        drawn=["lost-answer", "stop", "rerun", "stray-run", "dlq-redrive"],
    )


LOST = "lost-answer"  # a single fault's "error" that is no error response: the answer lost


def run_single(
    assembly: Path, kind: str, hit: PointHit, *, error: str | None = None, control: bool = False
) -> ScheduleResult:
    """One `kind` request with a crash at `hit` (or, with `error`, that AWS error response there;
    with `LOST`, the call's answer lost and resent)."""
    controller = CrashController()
    if error is None:
        controller.arm([hit])
    elif error == LOST:
        controller.arm_lost([hit])
    else:
        controller.arm_errors([(hit, error)])
    with chaos_cloud(assembly, controller=controller, control=control) as cloud:
        judged = run_requests(cloud, [kind], prefix="single")
        recovery = cloud.recovery
    violations = list(judged.violations)
    if not (controller.fired or controller.failed or controller.lost_fired):
        violations.append(f"harness: {hit.label} was never reached, so nothing was tested")
    fault = {None: f"crash {hit.label}", LOST: f"answer lost at {hit.label}"}.get(
        error, f"error {error} at {hit.label}"
    )
    return ScheduleResult(
        category="single",
        name=f"{kind} / {fault}",
        faults=[fault],
        fired=[h.label for h in controller.fired],
        violations=violations,
        recovery=recovery,
        points={h.label for h in controller.reached},
        errored=[h.label for h, _ in controller.failed],
        lost=[h.label for h in controller.lost_fired],
        drawn=["crash" if error is None else LOST if error == LOST else "error"],
    )


def faults_at(hits: Sequence[PointHit], *, control: bool) -> list[tuple[PointHit, str | None]]:
    """Each hit's crash, and at each AWS call an error response too (the service's transient codes
    taken in turn along the hits, so every code is drawn) and, after it, its answer lost; not in
    the control, which only shows what the guards prevent."""
    faults: list[tuple[PointHit, str | None]] = []
    for index, hit in enumerate(hits):
        faults.append((hit, None))
        if hit.at_call and not control:
            codes = errors_at(hit)
            faults.append((hit, codes[index % len(codes)]))
            if hit.point.startswith("after:"):
                faults.append((hit, LOST))
    return faults


def run_all(
    assembly: Path,
    points: dict[str, list[PointHit]],
    *,
    control: bool = False,
    select: Callable[[str, PointHit], bool] = lambda _kind, _hit: True,
    operator_calls: Sequence[PointHit] = (),
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
        for hit in operator_calls:
            result = run_operator_lost(assembly, hit)
            results.append(result)
            if progress is not None:
                progress(result)
    return results
