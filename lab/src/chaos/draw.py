"""Drawing fault schedules so that rare combinations are common: swarm testing, effects left at
their boundaries across the windows, and coverage of (fault kind, point) pairs.

The guards this project proves act across time: an effect made by an attempt that died, taken
over after the provider forgot its key; a fence deleted by TTL before a late redrive; an
execution failed on an error nobody retried, found after the redrive window. A schedule catches
such a bug only when several things line up (an effect left without its record, nobody
recovering it, then a window crossed, then a takeover), and a generator that draws each part
independently from every kind of fault and action makes that rare: the hypothesis strategy this
replaces drew a time jump before any redrive or restart in 15 % of its schedules (it favours
small, simple examples, and plans by its budget), so `provider-reconcile` needed a chosen seed.
Here, per schedule (`Drawer.draw`, from one seeded stream: schedule i of a seed is the same
whatever the budget):

- *left at a boundary* (half the schedules): one entity whose run reaches an effect
  boundary (after a write, or between an external effect and its record: `at_boundary`) is
  stopped there by an operator (its execution ABORTED, its invocation dead: nobody retries it;
  for the API, the client gives up), then time passes across one of the windows, then 0-3 more
  actions. The boundary is the least covered one;
- otherwise *swarm testing*: each kind of fault and of action is in the schedule's swarm with
  probability 1/2, and the schedule draws only from its swarm, so a schedule of few kinds (a
  stop and a time jump, without the redrive that would heal it first) is as common as any;
- *windows*: a time jump is one of the windows the app's keys and queues live by, read from the
  synthesized templates and `reliability.cdk.config` (never retyped: `Windows.read`), just past it (half),
  just short of it (a quarter), or 1-15 days (a quarter);
- *coverage*: each schedule is the best of `CANDIDATES` drawn the same way: the one with the most
  (fault kind, point) pairs no earlier schedule of the search fired;
- faults are drawn at the points the schedule's requests reach: a point recorded by a run of one
  outcome (`ops.outcomes`) is drawn for a schedule with a request of that outcome;
- *aimed* (a mutant's search only: `Catalogue.only`): the actions whose own runs reach the
  mutant's functions (`Catalogue.reaches`, measured by `chaos.aim`, not listed) are its *aim*; a
  swarm holds at least one of them, and each action is drawn from the swarm's aimed kinds with
  probability `AIM`. A guard in the API is reached by what a client sends, one in a consumer by
  deliveries: a new mutant on a new function is aimed with no edit. Without an aim (the main run
  and the control) the draw is the one above, schedule for schedule.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaos import callers, foreign
from chaos.cloud import short_name
from chaos.concurrent import with_concurrency
from chaos.points import PointHit, errors_at
from chaos.scenarios import KINDS, SERVICE
from chaos.schedules import MAX_DUPLICATES, Action, Schedule, queue_outputs
from chaos.single import ScheduleResult
from emulator.templates import read_template, resources_of_type, workflow_tasks
from ops.redrive import RESTART_SAFE_SECONDS
from ops.stack_outputs import queue_output
from reliability.cdk.config import REDRIVE_WINDOW_DAYS, SECONDS_PER_DAY

SWARM = 0.5  # each kind is in a schedule's swarm with this probability
LEFT_SHARE = 1 / 2  # the schedules drawn as an effect left at a boundary across a window
CANDIDATES = 3  # schedules drawn per schedule run; the one with the most uncovered pairs runs
AIM = 0.5  # an aimed search draws each action from the swarm's aimed kinds with this probability
MAX_ENTITIES = 3
MAX_ACTIONS = 10
FAULTS = ("crash", "error", "lost-answer", "timeout", "stop", "gives-up")
_AT_TOOLS = ("lost-answer",)  # what reaches a guard in an operator tool (its calls' answers lost)
ACTIONS = (
    "retry",
    "change-body",
    "stray-run",
    "rerun",
    "deliver",
    "throttled-poll",
    "lease-expiry",
    "wait",
    "redrive",
    "restart",
    "dlq-redrive",
    "time-travel",
    *callers.CHANGES,  # the world changes the service's proof knows (its `CHANGES`)
    # the review's dimensions: callers, late retries, foreign events, late copies
    "another-caller",
    "late-retry",
    "foreign-event",
    "late-copy",
)
_READS = (".GetItem", ".BatchGetItem", ".Query", ".Scan")


def workflow_of(assembly: Path) -> tuple[bool, frozenset[str], int]:
    """Whether the state machine is Express, its step functions by short name, and the API's
    queue's maxReceiveCount (the declared `Service.queue`)."""
    app, data = read_template(assembly, "app"), read_template(assembly, "data")
    api_queues = [
        q["Properties"]
        for q in resources_of_type(data, "AWS::SQS::Queue").values()
        if str(q["Properties"].get("QueueName", "")).endswith(f"-{SERVICE.queue}")
    ]
    receives = max((int(q.get("RedrivePolicy", {}).get("maxReceiveCount", 0)) for q in api_queues), default=0)
    machines = resources_of_type(app, "AWS::StepFunctions::StateMachine").values()
    express = any(m["Properties"].get("StateMachineType") == "EXPRESS" for m in machines)
    steps = set(workflow_tasks(app).values())
    short = {
        f["Properties"]["FunctionName"]: short_name(
            f["Properties"]["FunctionName"], f["Properties"]["Environment"]["Variables"]
        )
        for f in resources_of_type(app, "AWS::Lambda::Function").values()
        if f["Properties"].get("FunctionName") in steps
    }
    return express, frozenset(short.values()), receives


def at_boundary(hit: PointHit) -> bool:
    """After a write, or between an external effect and its record."""
    return hit.point.startswith("fence:") or (
        hit.point.startswith("after:") and not hit.point.endswith(_READS)
    )


@dataclass(frozen=True)
class Windows:
    """How long each key, message and refusal lives, in seconds, by name: the lengths a time jump
    is drawn across."""

    spans: tuple[tuple[str, int], ...]

    @classmethod
    def read(cls, assembly: Path) -> Windows:
        """From the synthesized templates (every `*_SECONDS` of the functions' environments, the
        step functions' timeout, which is their fence lease, the queues' retention) and the
        windows AWS sets (`reliability.cdk.config.REDRIVE_WINDOW_DAYS`,
        `ops.redrive.RESTART_SAFE_SECONDS`)."""
        app, data = read_template(assembly, "app"), read_template(assembly, "data")
        functions = [f["Properties"] for f in resources_of_type(app, "AWS::Lambda::Function").values()]
        steps = set(workflow_tasks(app).values())
        spans: list[tuple[str, int]] = [
            ("step lease", max(int(f["Timeout"]) for f in functions if f.get("FunctionName") in steps))
        ]
        for function in functions:
            for name, value in function.get("Environment", {}).get("Variables", {}).items():
                if name.endswith("_SECONDS") and str(value).isdigit():
                    spans.append((name, int(value)))
        for queue in resources_of_type(data, "AWS::SQS::Queue").values():
            period = queue["Properties"].get("MessageRetentionPeriod")
            if period is not None:
                spans.append((f"{queue['Properties'].get('QueueName', 'queue')} retention", int(period)))
        spans.append(("Step Functions redrive window", REDRIVE_WINDOW_DAYS * SECONDS_PER_DAY))
        spans.append(("restart-safe window", RESTART_SAFE_SECONDS))
        seen: dict[int, str] = {}
        for name, seconds in spans:
            seen.setdefault(seconds, name)
        return cls(tuple(sorted(((name, seconds) for seconds, name in seen.items()), key=lambda s: s[1])))

    def jump(self, rng: random.Random) -> int:
        """A time jump: just past a window (1/2), just short of one (1/4), or 1-15 days (1/4)."""
        roll = rng.random()
        if roll < 0.25 or not self.spans:
            return rng.randint(1, 15) * SECONDS_PER_DAY
        _, seconds = rng.choice(self.spans)
        margin = max(1, min(3600, seconds // 10))
        return seconds + margin if roll < 0.75 else max(1, seconds - margin)


@dataclass(frozen=True)
class Catalogue:
    """What schedules are drawn from: the points each outcome kind's clean run reaches, the
    operator tools' calls (lost answers only), the consumed queues and the windows."""

    by_kind: Mapping[str, tuple[PointHit, ...]]
    queues: tuple[str, ...]
    windows: Windows
    operator_calls: tuple[PointHit, ...] = ()
    express: bool = False  # the state machine is Express (chaos.concurrent's draws)
    steps: frozenset[str] = frozenset()  # the saga's step functions, by short name
    queue_receives: int = 0  # the API's queue's maxReceiveCount (its redrive policy)
    # False for a guard that lives in an operator tool: only lost answers at its calls reach it
    function_faults: bool = True
    # Each action kind -> the functions its runs reach (`chaos.aim.record_reaches`); empty: unmeasured
    reaches: Mapping[str, frozenset[str]] = field(default_factory=dict)
    aim: tuple[str, ...] = ()  # the action kinds drawn first (`only`: those reaching the mutant)

    @classmethod
    def of(
        cls, assembly: Path, points: Mapping[str, Sequence[PointHit]], operator_calls: Sequence[PointHit] = ()
    ) -> Catalogue:
        return cls(
            {kind: tuple(hits) for kind, hits in points.items()},
            queue_outputs(assembly),
            Windows.read(assembly),
            tuple(operator_calls),
            *workflow_of(assembly),
        )

    def only(self, keep: Callable[[str], bool]) -> Catalogue:
        """The points of the functions `keep` accepts (a mutant's: the faults that reach its guard),
        all of them where it accepts none; the operator calls of the tools it accepts (a guard in a
        tool: then only lost answers, at those calls, reach it)."""
        kept = {kind: tuple(h for h in hits if keep(h.function)) for kind, hits in self.by_kind.items()}
        tools = tuple(h for h in self.operator_calls if keep(h.function))
        if not any(kept.values()):
            kept = dict(self.by_kind)
        in_tools = bool(tools) and kept == dict(self.by_kind)
        return Catalogue(
            kept,
            self.queues,
            self.windows,
            tools,
            self.express,
            self.steps,
            self.queue_receives,
            function_faults=not in_tools,
            reaches=self.reaches,
            aim=tuple(k for k in ACTIONS if any(keep(f) for f in self.reaches.get(k, ()))),
        )

    def points(self, kinds: Sequence[str]) -> list[PointHit]:
        """The points the runs of these outcomes reach (every kind's if none of them reaches one)."""
        found = sorted({hit for kind in set(kinds) for hit in self.by_kind.get(kind, ())})
        return found or sorted({hit for hits in self.by_kind.values() for hit in hits})


Pair = tuple[str, str]  # (fault kind, point label)


@dataclass
class Drawer:
    """One search's schedules, from one seed; `observe` each result to steer coverage."""

    catalogue: Catalogue
    seed: int
    covered: set[Pair] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)  # noqa: S311 - a reproducible search, not a secret
        self._concurrency = random.Random(f"concurrent-{self.seed}")  # noqa: S311 - chaos.concurrent's

    def draw(self) -> Schedule:
        make = self._left if self._rng.random() < LEFT_SHARE else self._swarm
        candidates = [make(self._rng) for _ in range(CANDIDATES)]
        best = max(candidates, key=lambda s: len(planned(s) - self.covered))  # the first of the best
        return with_concurrency(best, self._concurrency, self.catalogue)

    def observe(self, schedule: Schedule, result: ScheduleResult) -> None:
        """Count as covered the planned pairs that fired."""
        fired = set(result.fired)
        done = {"error": set(result.errored), "lost-answer": set(result.lost)}
        self.covered |= {(kind, label) for kind, label in planned(schedule) if label in done.get(kind, fired)}

    # --- an effect left at its boundary, then a window crossed ---------------------------------
    def _left(self, rng: random.Random) -> Schedule:
        by_kind = {kind: [h for h in hits if at_boundary(h)] for kind, hits in self.catalogue.by_kind.items()}
        kinds = [kind for kind in KINDS if by_kind.get(kind)]
        if not kinds or not self.catalogue.function_faults:
            return self._swarm(rng)
        kind = rng.choice(kinds)
        boundary = rng.choice(_least_covered(by_kind[kind], "stop", self.covered))
        drawn = (kind, *(rng.choice(KINDS) for _ in range(rng.randint(0, MAX_ENTITIES - 1))))
        tail = [self.action(rng, self._kind(rng, ACTIONS), len(drawn)) for _ in range(rng.randint(0, 3))]
        return Schedule(
            outcomes=drawn,
            crashes=(),
            stops=(boundary,),
            gives_up=(0,) if boundary.function == "api" else (),
            actions=(Action("time-travel", seconds=self.catalogue.windows.jump(rng)), *tail),
        )

    # --- swarm testing -------------------------------------------------------------------------
    def _swarm(self, rng: random.Random) -> Schedule:
        swarm = {kind for kind in (*FAULTS, *ACTIONS) if rng.random() < SWARM}
        faults = FAULTS if self.catalogue.function_faults else _AT_TOOLS
        swarm -= set(FAULTS) - set(faults)
        if not swarm & set(faults):
            swarm.add(rng.choice(faults))
        if self.catalogue.aim and not swarm & set(self.catalogue.aim):
            swarm.add(rng.choice(self.catalogue.aim))
        drawn = tuple(rng.choice(KINDS) for _ in range(rng.randint(1, MAX_ENTITIES)))
        points = self.catalogue.points(drawn)
        calls = [h for h in points if h.at_call]
        answers = [h for h in calls if h.point.startswith("after:") and self.catalogue.function_faults]
        answers += self.catalogue.operator_calls

        def some(kind: str, pool: Sequence[PointHit], most: int) -> tuple[PointHit, ...]:
            return _some(rng, pool, rng.randint(1, most)) if kind in swarm and pool else ()

        errors = some("error", calls, 3)
        actions = [k for k in ACTIONS if k in swarm] or ["wait"]
        return Schedule(
            outcomes=drawn,
            crashes=some("crash", points, 3),
            errors=tuple((hit, rng.choice(errors_at(hit))) for hit in errors),
            lost=some("lost-answer", answers, 3),
            timeouts=some("timeout", points, 1),
            stops=some("stop", points, 1),
            gives_up=(rng.randrange(len(drawn)),) if "gives-up" in swarm else (),
            actions=tuple(
                self.action(rng, self._kind(rng, actions), len(drawn))
                for _ in range(rng.randint(1, MAX_ACTIONS))
            ),
        )

    def _kind(self, rng: random.Random, kinds: Sequence[str]) -> str:
        """One of `kinds`: with probability `AIM` one of the aimed among them (where there are)."""
        aimed = [k for k in kinds if k in self.catalogue.aim]
        if aimed and rng.random() < AIM:
            return rng.choice(aimed)
        return rng.choice(kinds)

    def action(self, rng: random.Random, kind: str, requests: int) -> Action:
        if kind == "time-travel":
            return Action(kind, seconds=self.catalogue.windows.jump(rng))
        if kind in ("deliver", "throttled-poll"):
            queue = rng.choice(self.catalogue.queues)
            return Action(
                kind, queue=queue, duplicates=rng.randint(0, MAX_DUPLICATES) if kind == "deliver" else 0
            )
        if kind not in _OF_AN_ENTITY:
            return Action(kind)
        entity = rng.randrange(requests)
        if kind == "foreign-event":
            consumers = [q for q in self.catalogue.queues if q != queue_output(SERVICE.queue)] or list(
                self.catalogue.queues
            )
            return Action(
                kind, entity=entity, queue=rng.choice(consumers), variant=rng.choice(foreign.VARIANTS)
            )
        variants = _VARIANTS.get(kind)
        return Action(kind, entity=entity, variant=rng.choice(variants) if variants else "")


# The actions about one of the schedule's requests, and the forms some take.
_OF_AN_ENTITY = frozenset(
    {"retry", "change-body", "stray-run", "rerun", "late-copy", *callers.CHANGES}
    | {"another-caller", "late-retry", "foreign-event"}
)
_VARIANTS = {"another-caller": callers.VARIANTS, "late-retry": callers.CHANGES}


def planned(schedule: Schedule) -> set[Pair]:
    """The (fault kind, point) pairs a schedule arms."""
    return {
        *(("crash", h.label) for h in schedule.crashes),
        *(("error", h.label) for h, _ in schedule.errors),
        *(("lost-answer", h.label) for h in schedule.lost),
        *(("timeout", h.label) for h in schedule.timeouts),
        *(("stop", h.label) for h in schedule.stops),
        *(("time-limit", h.label) for h in schedule.time_limits),
    }


def _some(rng: random.Random, pool: Sequence[PointHit], count: int) -> tuple[PointHit, ...]:
    """`count` distinct points, each from the effect boundaries with probability 1/2."""
    boundaries = [h for h in pool if at_boundary(h)]
    chosen: list[PointHit] = []
    for _ in range(count):
        hit = rng.choice(boundaries if boundaries and rng.random() < 0.5 else pool)
        if hit not in chosen:
            chosen.append(hit)
    return tuple(chosen)


def _least_covered(pool: Sequence[PointHit], kind: str, covered: set[Pair]) -> list[PointHit]:
    fresh = [h for h in pool if (kind, h.label) not in covered]
    return fresh or list(pool)
