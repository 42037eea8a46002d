"""Multi-fault schedules: what one holds, and how it is played (drawn by `chaos.draw`).

A schedule places 1-3 entities (requests of random outcome kinds) with faults armed at points of the recorded
catalogue (`chaos.single.catalogue`: any function, any point, any occurrence), then plays its
actions:

- `retry`: the client sends a request again with the same Idempotency-Key;
- `change-body`: the client sends the same Idempotency-Key with another body (its proof's
  variant of the request: the sample's, one more of each item), as a client that edits its request
  after a crash would: never a 2xx once the key was answered (422, or 409 while the first is in
  progress);
- `deliver`: one poll of a queue with 0-4 duplicate deliveries of the same records (up to 5);
- `throttled-poll`: one poll of a queue whose function is throttled (`cloud.throttled_poll`): the
  batch is received, never invoked, and comes back after the visibility timeout with its
  ApproximateReceiveCount raised; past maxReceiveCount the queue's redrive policy dead-letters it
  (after a time-travel, this is the event source mapping's redelivery days later);
- `lease-expiry`: the clock jumps one lease, so a live attempt's fence can be taken over;
- `wait`: let running executions finish;
- `redrive`: an operator redrives failed executions (`ops.redrive`, resumed at the failed state);
- `restart`: every entity's workflow is started again with the same token (fences skip);
- `dlq-redrive`: every DLQ is moved back to its source queue;
- `time-travel`: time passes (`ChaosCloud.pass_time`; `chaos.draw` picks the length across one
  of the windows): the platform first comes to rest by itself (queues polled, executions run, the
  sweeper; nobody redrives), then the clock jumps with DynamoDB TTL deletion and provider keys
  aging, so what follows (a redrive, a restart, a client retry, a DLQ redrive) comes back after
  keys may have expired;
- `rerun`: an operator's `make rerun` of an entity: run N+1 if its run N ended FAILED (the tool
  refuses any other); each run's effects are judged on their own (`ops.invariants`);
- `stray-run`: a message for an entity's next run arrives that no operator decided on (a run
  starts only through `make rerun` of a FAILED one);
- the world changes the service's proof names (`CHANGES`; the sample's: its catalog's prices
  and items change between retries);
- `another-caller`, `late-retry` (`chaos.callers`), `foreign-event`, `late-copy` (`chaos.foreign`):
  another client with shared or guessed keys and reads of others' entities; a retry after a catalog
  change and the HTTP key's expiry; events from other producers; a late copy after `make rerun`;

and the faults at points: crashes; injected error responses (each service's transient codes,
`chaos.points.TRANSIENT_ERRORS`, before or after the call: what botocore raises once its own
retries gave up); lost answers (the call lands, its answer is lost, the SDK sends it again:
`chaos.points`), at the functions' calls and the operator tools'; an invocation that times out
(Sandbox.Timedout); one that an operator stops with its execution (StopExecution while it runs;
it dies there); a client that gives up after its first attempt (the sweeper's case). Then the
schedule recovers to rest and is judged like every schedule (`chaos.scenarios.verdict`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.cloud import ChaosCloud, chaos_cloud
from chaos.concurrent import concurrent_restart, twin_deliver, twin_rerun
from chaos.mutant import Mutant
from chaos.points import CrashController, PointHit
from chaos.scenarios import ENTITY, SERVICE, Placed, place, request_body, verdict
from chaos.single import ScheduleResult
from ops.outcomes import change
from ops.stack_outputs import table_names

if TYPE_CHECKING:
    from chaos.draw import Catalogue
from emulator.synth import load_template, stack_names
from emulator.templates import queue_consumers
from simulator.world import reusing

MAX_DUPLICATES = 4  # 1 delivery + 4 duplicates = 5 of one message


@dataclass(frozen=True)
class Action:
    kind: str
    entity: int = 0  # which of the schedule's entities it acts on (modulo their number)
    queue: str = ""
    duplicates: int = 0
    days: int = 0
    seconds: int = 0  # a time-travel's length is days + seconds
    variant: str = ""  # which form an action of `chaos.callers` or `chaos.foreign` takes
    seed: int = 0  # how two concurrent copies' steps interleave (chaos.concurrent)

    @property
    def jump(self) -> int:
        return self.days * DAY + self.seconds

    def describe(self) -> str:
        said = {
            "time-travel": f"{_span(self.jump)} pass (TTL deletion)",
            "retry": f"client retry of {ENTITY} {self.entity}",
            "change-body": f"client reuses {ENTITY} {self.entity}'s key with another body",
            "stray-run": f"a message for {ENTITY} {self.entity}'s next run",
            "rerun": f"operator reruns {ENTITY} {self.entity} (make rerun)",
            "deliver": f"deliver {self.queue} x{1 + self.duplicates}",
            "throttled-poll": f"throttled poll of {self.queue}",
            "another-caller": f"another caller: {self.variant} with {ENTITY} {self.entity}'s key",
            "late-retry": f"{self.variant} under {ENTITY} {self.entity}, its key expires, its client retries",
            "foreign-event": f"a foreign event ({self.variant}) on {self.queue}",
            "late-copy": f"rerun of {ENTITY} {self.entity}, then a late copy of its earlier run's message",
            "twin-deliver": f"deliver {self.queue} to two workers at once (interleaving {self.seed})",
            "twin-rerun": (
                f"deliver {self.queue} to two workers at once, an operator reruns what fails "
                f"(interleaving {self.seed})"
            ),
            "concurrent-restart": f"restart every run while it runs (interleaving {self.seed})",
        }
        return said.get(self.kind, f"{self.kind} under {ENTITY} {self.entity}")


DAY = 86_400


def _span(seconds: int) -> str:
    if seconds % DAY == 0:
        return f"{seconds // DAY} days"
    if seconds >= DAY:
        return f"{seconds / DAY:.2f} days"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds} s"


@dataclass(frozen=True)
class Schedule:
    outcomes: tuple[str, ...]  # the outcome each entity's request asks for (`chaos.scenarios.KINDS`)
    crashes: tuple[PointHit, ...]
    actions: tuple[Action, ...]
    errors: tuple[tuple[PointHit, str], ...] = ()
    timeouts: tuple[PointHit, ...] = ()
    stops: tuple[PointHit, ...] = ()
    gives_up: tuple[int, ...] = ()  # entities whose client never retries its first request
    lost: tuple[PointHit, ...] = ()  # calls (their `after:` hit) whose first answer is lost
    time_limits: tuple[PointHit, ...] = ()  # the step's execution reaches its time limit there (Express)

    def faults(self) -> list[str]:
        out = [f"crash {hit.label}" for hit in self.crashes]
        out += [f"error {code} at {hit.label}" for hit, code in self.errors]
        out += [f"answer lost at {hit.label} (the SDK resends)" for hit in self.lost]
        out += [f"Sandbox.Timedout at {hit.label}" for hit in self.timeouts]
        out += [f"execution stopped at {hit.label}" for hit in self.stops]
        out += [f"execution killed at its time limit at {hit.label}" for hit in self.time_limits]
        out += [f"the client of {ENTITY} {i} gives up after one attempt" for i in self.gives_up]
        for action in self.actions:
            if action.kind == "deliver" and action.duplicates:
                out.append(f"{action.duplicates} duplicate deliveries ({action.queue})")
            elif action.kind not in {"wait", "deliver"}:
                out.append(action.describe())
        return out

    def describe(self) -> str:
        errors = [f"{code}@{hit.label}" for hit, code in self.errors]
        return (
            f"outcomes={list(self.outcomes)} crashes={[h.label for h in self.crashes]} errors={errors} "
            f"lost={[h.label for h in self.lost]} "
            f"timeouts={[h.label for h in self.timeouts]} stops={[h.label for h in self.stops]} "
            + (f"time_limits={[h.label for h in self.time_limits]} " if self.time_limits else "")
            + f"gives_up={list(self.gives_up)} "
            f"actions={[a.describe() for a in self.actions]}"
        )

    def kinds(self) -> list[str]:
        """The kinds of fault this schedule drew, each once (the report counts schedules per kind)."""
        drawn = [
            kind
            for kind, present in (
                ("crash", self.crashes),
                ("error", self.errors),
                ("lost-answer", self.lost),
                ("timeout", self.timeouts),
                ("stop", self.stops),
                ("time-limit", self.time_limits),
                ("gives-up", self.gives_up),
            )
            if present
        ]
        for action in self.actions:
            kind = "duplicate-delivery" if action.kind == "deliver" and action.duplicates else action.kind
            if kind not in drawn and kind not in ("deliver", "wait"):
                drawn.append(kind)
        return drawn


def queue_outputs(assembly: Path) -> tuple[str, ...]:
    """Every queue with a consumer (its URL output key), as the synthesized templates wire them:
    the worker's queue (`Service.queue`) and one per declared consumer."""
    by_suffix = {name.rsplit("-", 1)[-1]: load_template(assembly, name) for name in stack_names(assembly)}
    return tuple(queue_consumers(by_suffix["data"], by_suffix["app"]))


# What an action does to the cloud alone (the others need the schedule's entities).
_CLOUD_ACTIONS: dict[str, Callable[[ChaosCloud, Action], object]] = {
    "time-travel": lambda cloud, a: cloud.pass_time(a.jump),  # at rest, then TTL deletion
    "deliver": lambda cloud, a: cloud.deliver(a.queue, duplicates=a.duplicates),
    "throttled-poll": lambda cloud, a: cloud.throttled_poll(a.queue),
    "wait": lambda cloud, _: cloud.wait_all(),
    "redrive": lambda cloud, _: cloud.redrive_failed(),
    "restart": lambda cloud, _: cloud.restart_same_token(),
    "dlq-redrive": lambda cloud, _: cloud.redrive_dlqs(),
    "twin-deliver": lambda cloud, a: twin_deliver(cloud, a.queue, seed=a.seed),
    "twin-rerun": lambda cloud, a: twin_rerun(cloud, a.queue, seed=a.seed),
    "concurrent-restart": lambda cloud, a: concurrent_restart(cloud, seed=a.seed),
}


def _play(cloud: ChaosCloud, action: Action, keys: list[tuple[str, str]], placed: list[Placed]) -> None:
    from chaos import callers, foreign  # noqa: PLC0415 - they import this module's helpers

    if action.kind in _CLOUD_ACTIONS:
        _CLOUD_ACTIONS[action.kind](cloud, action)
    elif action.kind == "retry":
        kind, key = keys[action.entity % len(keys)]
        cloud.post_request(key, sent_body(kind, action.entity % len(keys)))
    elif action.kind == "change-body":
        kind, key = keys[action.entity % len(keys)]
        cloud.post_request(key, sent_body(kind, action.entity % len(keys), changed=True))
    elif action.kind in ("stray-run", "rerun"):
        entity_id = placed[action.entity % len(placed)].entity_id
        if entity_id is not None:
            (cloud.send_next_run if action.kind == "stray-run" else cloud.rerun_entity)(entity_id)
    elif action.kind in callers.CHANGES:
        kind, _ = keys[action.entity % len(keys)]
        body = sent_body(kind, action.entity % len(keys))
        change(SERVICE, cloud.dynamodb, table_names(SERVICE, cloud.outputs), body, action.kind)
    elif action.kind == "lease-expiry":
        cloud.clock.advance(cloud.step_lease_seconds() + 1)
        cloud.recovery.lease_expiries += 1
    elif action.kind == "another-caller":
        callers.another_caller(cloud, action, keys)
    elif action.kind == "late-retry":
        callers.late_retry(cloud, action, keys)
    elif action.kind == "foreign-event":
        foreign.foreign_event(cloud, action, placed)
    elif action.kind == "late-copy":
        foreign.late_copy(cloud, action, placed)


def sent_body(kind: str, index: int, *, changed: bool = False) -> dict[str, Any]:
    """Request `index`'s body as its client sends it; `changed`: another payload for its key (the
    proof's variant 1 of it: the sample's, one more of each item)."""
    return request_body(kind, index, 1 if changed else 0)


def run_schedule(
    assembly: Path, schedule: Schedule, *, control: bool = False, name: str = "", mutant: Mutant | None = None
) -> ScheduleResult:
    controller = CrashController()
    controller.arm(schedule.crashes)
    controller.arm_errors(schedule.errors)
    controller.arm_timeouts(schedule.timeouts)
    controller.arm_stops(schedule.stops)
    controller.arm_lost(schedule.lost)
    controller.arm_time_limits(schedule.time_limits)
    with chaos_cloud(assembly, controller=controller, control=control, mutant=mutant) as cloud:
        keys = [(kind, f"random-{i}-{kind}") for i, kind in enumerate(schedule.outcomes)]
        placed = [
            place(cloud, kind, key, index=i, gives_up=i in schedule.gives_up)
            for i, (kind, key) in enumerate(keys)
        ]
        for action in schedule.actions:
            _play(cloud, action, keys, placed)
        cloud.recover()
        judged = verdict(cloud, placed)
        recovery = cloud.recovery
        simulated = cloud.clock.offset
    return ScheduleResult(
        category="random",
        name=name or schedule.describe(),
        faults=schedule.faults(),
        fired=[h.label for h in controller.fired],
        violations=judged.violations,
        errored=[h.label for h, _ in controller.failed],
        recovery=recovery,
        points={h.label for h in controller.reached},
        simulated_seconds=simulated,
        lost=[h.label for h in controller.lost_fired],
        drawn=schedule.kinds(),
    )


def run_random(
    assembly: Path,
    catalogue: Catalogue,
    *,
    examples: int,
    seed: int,
    control: bool = False,
    raise_on_violation: bool = False,
    progress: Callable[[ScheduleResult], None] | None = None,
) -> list[ScheduleResult]:
    """`examples` schedules drawn from `seed` (`chaos.draw.Drawer`: schedule i of a seed is the
    same whatever `examples` is); with `raise_on_violation`, the first violating schedule is
    shrunk (`chaos.shrink`) and raised."""
    from chaos.draw import Drawer  # noqa: PLC0415 - draw imports this module's types
    from chaos.shrink import shrink  # noqa: PLC0415

    results: list[ScheduleResult] = []
    drawer = Drawer(catalogue, seed)
    with reusing():  # one moto world for all the schedules, reset between them
        for number in range(1, examples + 1):
            schedule = drawer.draw()
            result = run_schedule(assembly, schedule, control=control, name=f"#{number}")
            result.name = f"#{number}: {schedule.describe()}"
            drawer.observe(schedule, result)
            results.append(result)
            if progress is not None:
                progress(result)
            if raise_on_violation and result.violations:
                smallest = shrink(
                    schedule, lambda s: bool(run_schedule(assembly, s, control=control).violations)
                )
                raise AssertionError(f"{smallest.describe()}\n" + "\n".join(result.violations))
    return results
