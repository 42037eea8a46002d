"""The requests every schedule places, and the verdict taken after it (invariants + HTTP replays).

A schedule draws outcomes of the workflow (`ops.outcomes`, derived from the service's
declaration: the happy path, one per catch route; the sample's three between them run every
function of the app), and places for each
the request its proof builds (`request(outcome, index)`) on the declared starting route. A fault
must never change a business outcome, so the verdict also checks each run's final status against
its outcome's.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from chaos import callers, foreign
from chaos.cloud import ChaosCloud
from ops.invariants import EntityRow, check
from ops.outcomes import id_field, outcomes, request_factory, world_changed
from ops.service import service
from ops.stack_outputs import table_names
from reliability.errors import ReliabilityError, RetryableError
from reliability.workflow_runs import run_of_execution

SERVICE = service()
OUTCOMES = {outcome.name: outcome for outcome in outcomes(SERVICE)}
KINDS = tuple(OUTCOMES)  # what a schedule draws its requests' outcomes from; the happy path first
HAPPY = KINDS[0]
# The outcome that fails furthest along (the most steps run, then compensated): what the operator
# tools are exercised on (`chaos.single.operators_at_work`).
FAILING = max(
    (o for o in OUTCOMES.values() if not o.happy), key=lambda o: len(o.steps), default=OUTCOMES[HAPPY]
).name
ID_FIELD = id_field(SERVICE)  # the field of the starting route's answer naming the entity
ENTITY = SERVICE.entity.name  # what a request creates, as the verdict's messages call it


@dataclass(frozen=True)
class Placed:
    """A request placed: the outcome it asks for, its key, and the entity its 202 named."""

    kind: str
    key: str
    entity_id: str | None
    gave_up: bool = False  # the client stopped after its first attempt failed (no answer expected)
    index: int = 0  # which request of its outcome (`request_body`)


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    dead_letters: int = 0
    rows: dict[str, EntityRow] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations


def request_body(kind: str, index: int = 0, variant: int = 0) -> dict[str, Any]:
    """Request `index` of outcome `kind` as its client sends it (`variant`: another payload)."""
    return request_factory(SERVICE)(kind, index, variant)


def place(cloud: ChaosCloud, kind: str, key: str, *, index: int = 0, gives_up: bool = False) -> Placed:
    """POST the request as a client that retries (or, `gives_up`, one that never retries)."""
    response = cloud.post_request(key, request_body(kind, index), max_attempts=1 if gives_up else 8)
    entity_id = None
    if response is not None and response.status == 202:
        entity_id = str(response.body[ID_FIELD])
    return Placed(kind, key, entity_id, gave_up=gives_up and entity_id is None, index=index)


def verdict(cloud: ChaosCloud, placed: Sequence[Placed]) -> Verdict:
    """`ops.invariants` over the stores, every replayed HTTP answer equal to the first (a retry of
    an existing entity gets it), every request answered, nobody answered with another caller's
    entity (`chaos.callers`), every foreign event a consumer cannot verify dead-lettered with a
    reason and no late copy dead-lettered (`chaos.foreign`), and each entity's final status the
    one its outcome must reach (a dead letter excuses it, but not a run whose workflow failed and
    nothing finished: `_FailedRuns`)."""
    report = check(cloud.stores(), left_to_operator=cloud.awaiting_operator)
    result = Verdict(violations=list(report.violations), dead_letters=len(report.dead_letters))
    result.violations.extend(cloud.http_violations())
    result.violations.extend(callers.violations(cloud))
    result.violations.extend(foreign.violations(cloud))
    result.violations.extend(foreign.applied_and_dead_lettered(cloud, report.rows))
    result.violations.extend(cloud.contract_violations())
    result.violations.extend(cloud.fence_audit.violations)
    result.violations.extend(cloud.operator_violations)
    result.violations.extend(_execution_violations(cloud))
    result.violations.extend(_failure_violations(cloud))
    rows = {row.entity_id: row for row in report.rows}
    result.rows = rows
    failed_runs = _FailedRuns(cloud)  # read only if an entity missed its outcome with a dead letter
    for request in placed:
        if request.entity_id is None and request.gave_up:
            continue  # whatever it stored is judged by ops.invariants like every entity
        if request.entity_id is None:
            result.violations.append(
                f"{request.kind} {ENTITY} (key {request.key}): the client never got a 202"
            )
            continue
        row = rows.get(request.entity_id)
        if row is None:
            result.violations.append(f"{request.entity_id}: accepted (202) but not stored")
            continue
        result.statuses[request.entity_id] = row.status
        expected = OUTCOMES[request.kind].status
        # Reference data that left (the proof's `world_changed`) may send a run down a catch route.
        changed = row.status != expected and _world_changed(cloud, request)
        left = request.entity_id in cloud.awaiting_operator
        if row.status == expected or changed or left:
            continue
        if not row.dead_letters:
            result.violations.append(
                f"{request.entity_id}: a {request.kind} {ENTITY} ended {row.status}, expected {expected}"
            )
        elif failed := failed_runs.of(request.entity_id, row.run):
            result.violations.append(
                f"{request.entity_id}: a {request.kind} {ENTITY} ended {row.status}, expected "
                f"{expected}: its run's workflow failed ({failed}) and nothing finished it, which its "
                "dead letter does not excuse"
            )
    return result


@dataclass
class _FailedRuns:
    """The runs whose workflow failed and never succeeded, from the executions (read when first
    asked). A dead letter excuses an entity that missed its outcome when its message could not be
    handled, not when its run's workflow failed: the platform's retries and the operator's redrive
    (or restart) must finish such a run, and one they could not finish is the stuck run Standard
    shows as a FAILED execution. Express's worker dead-letters that run too, after the queue's last
    receive, with the execution's end as the reason (`reliability.queue_handlers`): no excuse. An
    entity left to a person (`awaiting_operator`) is judged apart."""

    cloud: ChaosCloud

    @cached_property
    def _ends(self) -> dict[tuple[str, int], Counter[str]]:
        """Each (entity, run)'s executions by how they ended (`SUCCEEDED`, `FAILED <error>`, ...)."""
        ends: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
        for execution in self.cloud.executions():
            described = self.cloud.described(execution["executionArn"])
            end = f"{described['status']} {described.get('error') or ''}".strip()
            ends[run_of_execution(execution["name"])][end] += 1
        return ends

    def of(self, entity_id: str, run: int) -> str:
        """What the run's executions failed on ("" when one succeeded, or none ended otherwise)."""
        ends = self._ends.get((entity_id, run), Counter())
        failed = {end: count for end, count in ends.items() if end.split()[0] in _UNFINISHED_ENDS}
        if "SUCCEEDED" in ends or not failed:
            return ""
        return ", ".join(f"{count} {end}" for end, count in failed.items())


# How an execution ends without finishing its run (RUNNING is not an end).
_UNFINISHED_ENDS = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})


# Executions an operator starts on purpose (ops.redrive's restart, chaos's restart with the same
# token) carry these in their names; every other one is the worker's start of (entity, run).
_OPERATOR_NAMES = ("-restart-", "-again-")


def _execution_violations(cloud: ChaosCloud) -> list[str]:
    """The worker starts one execution per (entity, run): its name is derived, so a second start
    of the same run (a redelivered message, a retried worker) is refused by Step Functions."""
    if cloud.express:
        return []  # Express dedupes no names: its queue runs a run as often as it takes
    started: Counter[tuple[str, int]] = Counter()
    for execution in cloud.executions():
        if any(mark in execution["name"] for mark in _OPERATOR_NAMES):
            continue
        started[run_of_execution(execution["name"])] += 1
    return [
        f"{entity_id}: the worker started {count} executions of run {run} (one per run)"
        for (entity_id, run), count in sorted(started.items())
        if count > 1
    ]


def _operator_stops() -> frozenset[str]:
    """Errors that stop an execution for an operator by design: the reliability layer's failures a
    retry cannot cure (StaleFence, ExternalKeyExpired, ...)."""
    found, todo = set(), [ReliabilityError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not issubclass(cls, RetryableError):
            found.add(cls.__name__)
    return frozenset(found)


def _failure_violations(cloud: ChaosCloud) -> list[str]:
    """Every execution that failed, failed on an error the deployed workflow declares: one its
    Retry names (so the retries ran out), one its Catch routes, or an operator stop. Anything else
    (a transient error nobody retries, an AWS error nobody mapped) fails an entity that only
    needed a retry, even when an operator's redrive then finished it (`cloud.failures`: what each
    execution the operator redrove had failed on)."""
    definition = json.loads(
        cloud.sfn.describe_state_machine(stateMachineArn=cloud.outputs["StateMachineArn"])["definition"]
    )
    declared = {
        error
        for state in definition["States"].values()
        for rule in (*state.get("Retry", ()), *state.get("Catch", ()))
        for error in rule["ErrorEquals"]
    }
    if "States.ALL" in declared:
        return []
    declared |= _operator_stops()
    failed = dict(cloud.failures)
    for execution in cloud.executions():
        if execution["status"] == "FAILED":
            error = cloud.described(execution["executionArn"]).get("error")
            failed[execution["executionArn"]] = (execution["name"], error)
    return [
        f"{name}: failed on {error}, which no Retry or Catch of the workflow names "
        "(nor is it a failure for an operator)"
        for name, error in failed.values()
        if error not in declared
    ]


def _world_changed(cloud: ChaosCloud, request: Placed) -> bool:
    body = request_body(request.kind, request.index)
    return world_changed(SERVICE, cloud.dynamodb, table_names(SERVICE, cloud.outputs), body)


def run_requests(cloud: ChaosCloud, kinds: Sequence[str], *, prefix: str = "chaos") -> Verdict:
    """Place the requests, recover to rest, and judge."""
    placed = [place(cloud, kind, f"{prefix}-{i}-{kind}", index=i) for i, kind in enumerate(kinds)]
    cloud.recover()
    return verdict(cloud, placed)
