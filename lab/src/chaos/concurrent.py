"""Two copies of one run at once, their steps interleaved by a seed, and Express's time limit.

What the platform does that runs one entity's run twice concurrently (`simulator.concurrent`
interleaves them at every storage call, in the order `random.Random(seed)` picks, so a schedule
has one outcome):

- `twin-deliver`: one poll's batch handled by two workers at once (SQS delivers at least once,
  and two pollers may receive one message). On Express each worker runs the run's execution
  (StartSyncExecution dedupes no names: two executions of one name, the same token); on
  Standard the name dedupes the start and the one execution runs afterwards.
- `concurrent-restart`: the run started again while its first copy runs. On Standard, the
  worker's queue is polled (the worker starts each run's execution) and every run is restarted
  with the same token under a new name (`RecoveringCloud.restart_same_token`) before either
  execution ran: the two executions then run at once (`ExecutionQueue.run_together`), the gap
  the README named ("the steps of two executions interleaved"). On Express, an operator's
  `make redrive-workflow ID=<id>` sends each unfinished run's message again
  (`ops.redrive.restart_express_run`) and every message in the queue goes to a worker of its
  own, all at once: the copy and the first run's worker execute together.
- `time-limit` (a fault at a step's point, Express): the execution reaches its time limit there
  (the clock moves to its deadline, `InProcessCloud.kill_at_time_limit`) and ends TIMED_OUT at
  its next state while the invocation runs on; the worker keeps the message, which comes back,
  and the next attempt runs the run again under the same token. (The `stop` fault on Express is
  the same kill with the invocation dying at the point: Express has no StopExecution.)

- `twin-rerun` (Express): the twin delivery with an operator beside the two workers, who runs
  `make rerun` on the entity as soon as it reads FAILED (`ops.rerun`). The operator cannot see the
  slower copy, still running run N's steps: it meets run N+1 (on Standard an execution stopped
  and redriven does that, `chaos.races`; Express has neither, and its queue's copies of run N
  are refused by the worker's run guard once run N+1 exists).

- an effect left at its boundary on Express: Express has no StopExecution and its queue runs a
  killed run again within minutes, so an effect nobody takes over for a day (what
  `provider-reconcile` guards: the provider forgets its key after 24 h) needs the run's message
  elsewhere meanwhile. The Express schedules `chaos.draw` leaves at a boundary deliver the
  worker's queue (the kill fires), throttle the worker for the message's every other receive (SQS
  dead-letters it), cross the window and redrive the DLQ (`left_in_the_dlq`).

`with_concurrency` adds these to a drawn schedule from a stream of its own (the seed's other
draws are unchanged): every Express schedule may get them, a Standard one the restart.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ops.service import service
from ops.stack_outputs import queue_output, table_output
from reliability.workflow_runs import RunStatus
from simulator.cloud import LambdaError
from simulator.concurrent import Interleaver, seeded, switch_point

if TYPE_CHECKING:
    from chaos.cloud import ChaosCloud
    from chaos.draw import Catalogue
    from chaos.points import PointHit
    from chaos.schedules import Action, Schedule

WORKER_QUEUE = queue_output(service().queue)  # the worker's queue's URL output
TWIN_SHARE = 1 / 2  # Express schedules given a twin delivery of the worker's queue
RESTART_SHARE = 1 / 4  # schedules given a restart while the first copy runs
TIME_LIMIT_SHARE = 1 / 3  # Express schedules given a time-limit kill at a step's point
# Express effects left at a boundary whose run then waits in the DLQ: all of them (the swarm
# draws the plain shape, a kill the queue retries at once).
LEFT_SHARE = 1.0


def _worker_outcome(cloud: ChaosCloud, queue_output: str, event: dict[str, Any]) -> set[str]:
    """One worker's invocation with `event`: the message ids it handled."""
    try:
        response = cloud.invoke(cloud.queue_consumers[queue_output], json.loads(json.dumps(event)))
    except LambdaError:
        return set()
    failed = {item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])}
    return {r["messageId"] for r in event["Records"]} - failed


def _workers_at_once(
    cloud: ChaosCloud, queue_output: str, events: Sequence[dict[str, Any]], seed: int
) -> set[str]:
    """Each event to a worker of its own, all at once, interleaved by `seed`; the message ids
    some worker handled. A harness failure (a stalled interleaving) is raised, never judged."""
    outcomes = Interleaver(seeded(seed)).run(
        [partial(_worker_outcome, cloud, queue_output, e) for e in events]
    )
    succeeded: set[str] = set()
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
        succeeded |= outcome.result
    return succeeded


def twin_deliver(cloud: ChaosCloud, queue_output: str, *, seed: int) -> int:
    """One poll of the queue whose batch two workers handle at once (see the module doc)."""
    messages, event = cloud.receive_batch(queue_output)
    if not messages:
        return 0
    succeeded = _workers_at_once(cloud, queue_output, [event, event], seed)
    cloud.recovery.concurrent_copies += 2
    cloud.acknowledge(queue_output, messages, succeeded)
    return len(messages)


def twin_rerun(cloud: ChaosCloud, queue_output: str, *, seed: int) -> int:
    """One poll's batch to two workers at once, and an operator who reruns each entity it names
    once it reads FAILED, all three interleaved by `seed` (see the module doc)."""
    messages, event = cloud.receive_batch(queue_output)
    if not messages:
        return 0
    # a message the worker cannot read names no entity (`_run_of`: "" or "None"): nothing to rerun
    entity_ids = sorted({entity_id for entity_id, run in map(_run_of, messages) if run > 0} - {"", "None"})
    interleaver = Interleaver(seeded(seed))
    workers = [partial(_worker_outcome, cloud, queue_output, event) for _ in range(2)]
    operator = partial(_rerun_once_failed, cloud, entity_ids, interleaver, workers=(0, 1))
    *copies, reran = interleaver.run([*workers, operator])
    succeeded: set[str] = set()
    for outcome in (*copies, reran):
        if outcome.error is not None:
            raise outcome.error
    for outcome in copies:
        succeeded |= outcome.result
    cloud.recovery.concurrent_copies += 2
    cloud.acknowledge(queue_output, messages, succeeded)
    return len(messages)


def _rerun_once_failed(
    cloud: ChaosCloud, entity_ids: Sequence[str], interleaver: Interleaver, *, workers: Sequence[int]
) -> None:
    """`make rerun` of each entity at the first turn it reads FAILED (`RecoveringCloud.rerun_now`);
    it looks again at each turn it gets, and stops looking once the workers have ended."""
    waiting = list(entity_ids)
    while waiting and not interleaver.finished(workers):
        for entity_id in list(waiting):
            item = cloud.entity_item(entity_id)
            if item is not None and item.get("status", {}).get("S") == RunStatus.FAILED:
                waiting.remove(entity_id)
                cloud.rerun_now(entity_id)
        switch_point()


def concurrent_restart(cloud: ChaosCloud, *, seed: int) -> int:
    """Every run started again while its first copy runs (see the module doc). Returns how many
    executions or workers ran at once with a copy of their run."""
    if not cloud.express:
        cloud.deliver(WORKER_QUEUE)
        cloud.restart_same_token()
        copies = cloud.queued_executions.run_together(seeded(seed))
    else:
        _resend_unfinished_runs(cloud)
        messages, _ = cloud.receive_batch(WORKER_QUEUE)
        if not messages:
            return 0
        queue_arn = cloud._queue_arn(WORKER_QUEUE)
        from simulator.events import sqs_record  # noqa: PLC0415

        events = [{"Records": [sqs_record(m, queue_arn=queue_arn)]} for m in messages]
        runs = Counter(_run_of(m) for m in messages)
        succeeded = _workers_at_once(cloud, WORKER_QUEUE, events, seed)
        cloud.acknowledge(WORKER_QUEUE, messages, succeeded)
        copies = sum(count for count in runs.values() if count > 1)
    cloud.recovery.concurrent_copies += copies
    return copies


def _run_of(message: dict[str, Any]) -> tuple[str, int]:
    try:
        body = json.loads(message["Body"])
        return str(body.get(service().entity.id_field)), int(body.get("run", 1))
    except (ValueError, TypeError, AttributeError):
        return ("", 0)


def _resend_unfinished_runs(cloud: ChaosCloud) -> None:
    """The operator's restart of each unfinished entity's run on Express (its message again; the
    tool refuses a finished entity, and one past the restart-safe window, which it leaves to a
    person: `RecoveringCloud.restart_express_entity`)."""
    sqs = cloud.operator_client("ops.redrive", "sqs")
    items = cloud.dynamodb.scan(TableName=cloud.outputs[table_output(service().entity.table)]).get(
        "Items", []
    )
    for item in items:
        entity_id = item.get(service().entity.id_field, {}).get("S")
        if entity_id is not None and cloud.restart_express_entity(entity_id, sqs):
            cloud.recovery.restarts += 1


# --- drawing them ---------------------------------------------------------------------------------
def left_in_the_dlq(actions: list[Action], receives: int) -> list[Action]:
    """An effect left at its boundary on Express (`chaos.draw`'s left family: the execution killed
    there, `time-travel` first): the queue would run the run again within minutes, so nobody
    takes over only while its message waits elsewhere. The worker's queue is delivered (the kill fires),
    the worker is throttled for the message's every other receive (SQS dead-letters it), the
    window passes, and the operator redrives the DLQ: the takeover comes after the window."""
    from chaos.schedules import Action  # noqa: PLC0415 - schedules imports this module

    held = [
        Action("deliver", queue=WORKER_QUEUE),
        *(Action("throttled-poll", queue=WORKER_QUEUE) for _ in range(receives)),
    ]
    return [*held, actions[0], Action("dlq-redrive"), *actions[1:]]


def with_concurrency(schedule: Schedule, rng: random.Random, catalogue: Catalogue) -> Schedule:
    """`schedule` with the draws of this module added (from `rng`, a stream of their own)."""
    from chaos.schedules import Action  # noqa: PLC0415 - schedules imports this module

    actions = list(schedule.actions)
    express = catalogue.express

    def insert(action: Action) -> None:  # after the first action (a left effect's window comes first)
        actions.insert(rng.randint(min(1, len(actions)), len(actions)), action)

    if express and rng.random() < TWIN_SHARE:
        insert(Action("twin-deliver", queue=WORKER_QUEUE, seed=rng.randrange(2**31)))
    if rng.random() < RESTART_SHARE:
        insert(Action("concurrent-restart", seed=rng.randrange(2**31)))
    if (
        express
        and schedule.stops
        and actions
        and actions[0].kind == "time-travel"
        and rng.random() < LEFT_SHARE
    ):
        actions = left_in_the_dlq(actions, catalogue.queue_receives)
    limits: tuple[PointHit, ...] = ()
    steps = [h for h in catalogue.points(schedule.outcomes) if h.function in catalogue.steps]
    if express and steps and rng.random() < TIME_LIMIT_SHARE:
        limits = (rng.choice(steps),)
    return replace(schedule, actions=tuple(actions), time_limits=limits)
