"""Systematic interleavings of two attempts of the same work, at the granularity of a storage call.

Two attempts (the same HTTP request, the same SQS record, the same saga step) each run on their
own thread, parked before every AWS call and resumed one at a time in the order a chooser says
(`chaos.scheduler`); a depth-first search over those choices enumerates every interleaving, each
from the just-deployed world (one moto world reset between them). A schedule of two attempts
with a and b calls has at most C(a+b, a) interleavings; attempts that stop early (a lost claim)
make the tree smaller.

Zombies: with `late=True`, the second attempt runs with its clock one lease later (a per-thread
skew of the harness clock), so it sees the first attempt's lease as expired: it takes over while
the first, still alive, resumes afterwards and tries to complete (StaleFence, its effect not
recorded).

After each interleaving the parked world is released, recovered to rest and judged like every
other schedule (`chaos.scenarios.verdict`), and each attempt's outcome must be acceptable: a
result, or a retryable refusal (FenceBusy, StaleFence, a 409 to the client).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.cloud import ChaosCloud, chaos_cloud, rest_post
from chaos.exchanges import Exchange
from chaos.mutant import Mutant
from chaos.points import CrashController
from chaos.scenarios import HAPPY, Placed, Verdict, request_body, verdict
from chaos.scheduler import Attempt, Chooser, Scheduler, SkewClock, dfs
from ops.service import composition_root, service
from ops.stack_outputs import queue_output
from reliability.keys import execution_token
from reliability.runtime import Runtime
from reliability.settings import FunctionSettings, settings_of
from simulator.cloud import sqs_record
from simulator.world import reusing

# What a losing attempt may answer: retryable refusals the platform retries or ignores.
ACCEPTABLE_ERRORS = frozenset({"FenceBusy", "StaleFence"})
# The saga's happy path, from its one declaration (a step's function prefix is its state name).
HAPPY_PATH = service().happy_path()


@dataclass
class PairResult:
    name: str
    interleavings: int = 0
    violations: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    points: set[str] = field(default_factory=set)
    max_calls: tuple[int, int] = (0, 0)


def _outcome(attempt: Attempt) -> str:
    if attempt.error is None:
        result = attempt.result
        if isinstance(result, dict) and "statusCode" in result:
            return str(result["statusCode"])
        if isinstance(result, dict) and result.get("batchItemFailures"):
            return "batch-failure"
        return "ok"
    return type(attempt.error).__name__


@contextmanager
def _world(
    assembly: Path, *, control: bool, mutant: Mutant | None = None
) -> Iterator[tuple[ChaosCloud, CrashController, SkewClock]]:
    controller = CrashController()
    clock = SkewClock()
    with chaos_cloud(assembly, controller=controller, control=control, clock=clock, mutant=mutant) as cloud:
        yield cloud, controller, clock


@dataclass(frozen=True)
class Pair:
    """Two attempts of one piece of work: `prepare` builds the world up to it and returns the
    attempt bodies' argument; `target` is `api`, `worker` or a step name."""

    target: str
    late: bool = False

    @property
    def name(self) -> str:
        return f"{self.target}{' (zombie: 2nd attempt one lease later)' if self.late else ''}"


def _lease(cloud: ChaosCloud, output_prefix: str) -> float:
    return float(cloud.functions[cloud.function(output_prefix)].timeout) + 1


def _run_pair(
    pair: Pair, cloud: ChaosCloud, scheduler: Scheduler, choose: Callable[[list[int]], int]
) -> tuple[list[Attempt], Placed]:
    key = "pair-key"
    body = request_body(HAPPY)
    if pair.target == "api":
        event = rest_post(key, body)
        api = cloud.function("Api")
        attempts = [Attempt(lambda: cloud.call(api, json.loads(json.dumps(event)))) for _ in range(2)]
        if pair.late:
            attempts[1].skew = _lease(cloud, "Api")
        scheduler.run(attempts, choose)
        for index in scheduler.finished:  # the client sees answers in the order they complete
            _record_exchange(cloud, key, attempts[index])
        response = cloud.post_request(key, body)  # the client's retry of whatever was refused
        entity_id = (
            str(response.body[service().entity.id_field])
            if response is not None and response.status == 202
            else None
        )
        return attempts, Placed(HAPPY, key, entity_id)

    response = cloud.post_request(key, body)
    if response is None or response.status != 202:
        raise RuntimeError(f"setup: the starting POST answered {response}")
    entity_id = str(response.body[service().entity.id_field])
    placed = Placed(HAPPY, key, entity_id)
    if pair.target == "worker":
        url = cloud.outputs[queue_output(service().queue)]
        (message,) = cloud.sqs.receive_message(QueueUrl=url, AttributeNames=["All"], MaxNumberOfMessages=1)[
            "Messages"
        ]
        event = {"Records": [sqs_record(message, queue_arn=f"arn:aws:sqs:::{url.rsplit('/', 1)[-1]}")]}
        worker = cloud.function("Worker")
        attempts = [Attempt(lambda: cloud.call(worker, json.loads(json.dumps(event)))) for _ in range(2)]
        if pair.late:
            attempts[1].skew = _lease(cloud, "Worker")
        # On Express the worker runs the execution itself: its steps cannot be held back.
        with contextlib.nullcontext() if cloud.express else cloud.holding_steps():
            scheduler.run(attempts, choose)
        # The record goes back to the queue (as after its visibility timeout): a redelivery
        # must be harmless too, and recover() handles it.
        cloud.sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
        return attempts, placed

    # A saga step: run the steps before it directly (as the execution would), then the pair.
    # The worker's runtime (the service's own, on the harness's clients: no crash point, no
    # mutant) reads the entity and gives the workflow's input.
    harness = _harness_runtime(cloud, "Worker")
    entity = harness.run_store.get(entity_id)
    if entity is None:
        raise RuntimeError(f"setup: no {service().entity.name} {entity_id}")
    token = execution_token(stage=_stage(cloud), business_id=entity_id, run=1)
    state: dict[str, Any] = dict(harness.workflow_input(entity, 1, token))
    results: dict[str, Any] = {}
    for step in HAPPY_PATH[: HAPPY_PATH.index(pair.target)]:
        results[step] = cloud.call(cloud.function(step), {**state, "results": dict(results)})
    step_event = {**state, "results": dict(results)}
    function = cloud.function(pair.target)
    attempts = [Attempt(lambda: cloud.call(function, json.loads(json.dumps(step_event)))) for _ in range(2)]
    if pair.late:
        attempts[1].skew = _lease(cloud, pair.target)
    scheduler.run(attempts, choose)
    # The attempts' leases pass before the workflow (started by recover()) gets there.
    cloud.clock.advance(_lease(cloud, pair.target))
    return attempts, placed


def _harness_runtime(cloud: ChaosCloud, prefix: str) -> Runtime[FunctionSettings]:
    function = cloud.function(prefix)
    settings = settings_of(cloud.functions[function].handler).from_env(cloud.environment(function))
    runtime: type[Runtime[FunctionSettings]] = composition_root(service()).Runtime
    return runtime(settings, client_factory=cloud.client, clock=cloud.clock)


def _stage(cloud: ChaosCloud) -> str:
    return cloud.functions[cloud.function("Api")].environment["STAGE"]


def _record_exchange(cloud: ChaosCloud, key: str, attempt: Attempt) -> None:

    result = attempt.result
    if attempt.error is not None or not isinstance(result, dict):
        cloud.exchanges.append(Exchange(key, 502, None, replayed=False))
        return
    headers = {k: v[-1] for k, v in (result.get("multiValueHeaders") or {}).items() if v}
    headers.update(result.get("headers") or {})
    replayed = any(k.lower() == "idempotent-replayed" and v == "true" for k, v in headers.items())
    body = json.loads(result["body"]) if result.get("body") else None
    cloud.exchanges.append(
        Exchange(key, int(result["statusCode"]), body, replayed, headers=tuple(headers.items()))
    )


def _replayed(result: Any) -> bool:
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    headers.update({k.lower(): v[-1] for k, v in (result.get("multiValueHeaders") or {}).items() if v})
    return str(headers.get("idempotent-replayed", "")).lower() == "true"


def _judge_attempts(pair: Pair, attempts: list[Attempt]) -> list[str]:
    problems = []
    for index, attempt in enumerate(attempts):
        outcome = _outcome(attempt)
        if attempt.error is not None and outcome not in ACCEPTABLE_ERRORS:
            problems.append(f"attempt {index} raised {outcome}: {attempt.error}")
        if outcome not in ("ok", "202", "409", "batch-failure", *ACCEPTABLE_ERRORS):
            problems.append(f"attempt {index} answered {outcome}")
    executed = [a for a in attempts if _outcome(a) == "202" and not _replayed(a.result)]
    if pair.target == "api" and not pair.late and len(executed) == 2:
        # While the first holds the key (its in-progress window is live), the second must wait.
        problems.append("two requests with one key both executed (the second must get 409 or the replay)")
    done = [a.result for a in attempts if a.error is None]
    if pair.target not in ("api", "worker") and len(done) == 2 and done[0] != done[1]:
        problems.append(f"two attempts of one step returned different results: {done[0]} / {done[1]}")
    return problems


@dataclass
class InterleavingRun:
    """One interleaving, run and judged: the choices made, the attempts, the verdict."""

    trace: str
    attempts: list[Attempt]
    verdict: Verdict
    problems: list[str]
    points: set[str]
    choices: list[tuple[list[int], int]]


def run_interleaving(
    assembly: Path,
    pair: Pair,
    choose: Callable[[list[int]], int],
    *,
    control: bool = False,
    mutant: Mutant | None = None,
) -> InterleavingRun:
    """A world as just deployed, run the pair in the order `choose` dictates, recover, judge."""
    with _world(assembly, control=control, mutant=mutant) as (cloud, controller, clock):
        scheduler = Scheduler(controller, clock)
        attempts, placed = _run_pair(pair, cloud, scheduler, choose)
        cloud.recover()
        judged = verdict(cloud, [placed])
        points = {h.label for h in controller.reached}
    choices = choose.trace if isinstance(choose, Chooser) else []
    return InterleavingRun(
        trace="".join(str(c) for _, c in choices),
        attempts=attempts,
        verdict=judged,
        problems=judged.violations + _judge_attempts(pair, attempts),
        points=points,
        choices=choices,
    )


def explore(
    assembly: Path,
    pair: Pair,
    *,
    control: bool = False,
    limit: int | None = None,
    mutant: Mutant | None = None,
) -> PairResult:
    """Every interleaving of the pair (or the first `limit`), each judged from a world as it was
    just after the deploy (one moto world, reset between interleavings)."""
    result = PairResult(pair.name)

    def one(chooser: Chooser) -> None:
        run = run_interleaving(assembly, pair, chooser, control=control, mutant=mutant)
        result.points |= run.points
        result.outcomes["+".join(sorted(_outcome(a) for a in run.attempts))] += 1
        calls = (run.attempts[0].calls, run.attempts[1].calls)
        result.max_calls = (max(result.max_calls[0], calls[0]), max(result.max_calls[1], calls[1]))
        result.violations.extend(f"interleaving {run.trace}: {p}" for p in run.problems)

    with reusing():
        result.interleavings = dfs(one, limit=limit)
    return result


PAIRS = (
    Pair("api"),
    Pair("api", late=True),
    Pair("worker"),
    Pair("worker", late=True),
    *(Pair(step) for step in HAPPY_PATH),
    *(Pair(step, late=True) for step in HAPPY_PATH),
)
