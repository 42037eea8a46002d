"""A service's capabilities as data: its business entity, tables, fenced steps, routes, consumers,
and what each entry's effect is declared to do.

A service writes one `Service` (the sample: `orders.workflow.SERVICE`); everything else derives
from it: the functions, queues, grants and state machine (infra), the runtime's ports (the service's
own code resolves the dotted paths at cold start) and the lab's tools (simulator, fault search,
invariant checker, story, redrive). The declared effects (`Item`, `Step.provider`,
`Step.compensates`) are what a tool may check without knowing the domain: each written item once
per (business id, run), each applied effect of a failed run compensated.

Why this shape: frozen stdlib dataclasses with code named by its dotted path (`module:function`).
The CDK app must not import runtime code (boto3, Powertools, pydantic), so it loads the service's
declaration as data; a registry filled by decorators on the effects would make it import them.
This module imports the standard library only (lib/reliability/tests/test_declaration.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

# A step's timeout is also its fence lease: a second invocation may take the fence over only
# after the first one can no longer be running.
STEP_TIMEOUT_SECONDS = 20
CONSUMER_TIMEOUT_SECONDS = 30
# The hex digits of an entity id's digest: the prefix and these stay well inside an execution
# name's 80 characters with "-r<run>" after them.
ENTITY_ID_HEX = 32
# The port of a step that sends the service's event to every consumer's queue.
EVENTS = "events"
# The table every fenced step gets (its records), whatever it declares.
FENCES = "fences"


# A step's status on a run, read from its fence (`reliability.saga.Saga.step_statuses`): DONE and
# FAILED as its record says, COMPENSATED once the step that `compensates` it is done. No
# docstring: a service's API contract may expose it, and pydantic would publish it in the schema.
class StepStatus(StrEnum):
    DONE = "DONE"
    FAILED = "FAILED"
    COMPENSATED = "COMPENSATED"


@dataclass(frozen=True)
class Item:
    """A kind of business item an effect writes: in `table` (a short name), the items whose sort
    key starts with `prefix`."""

    table: str
    prefix: str


@dataclass(frozen=True, kw_only=True)
class Step:
    """One fenced task of the workflow.

    `name` is the state name (PascalCase); the function is its kebab-case (`function_name`).
    `kind`: `atomic` (DynamoDB writes committed with the fence, effect `(ctx, entity, request) ->
    Effect`) or `leased` (an external effect under a lease, effect `(ctx, entity, request,
    external_key) -> dict`, optionally `reconcile` `(ctx, entity, request) -> dict | None`).
    `ports`: the tables it writes besides fences (the entity's table too, if it sets its status),
    or `EVENTS`; its grants and environment are these and nothing else.
    `next`: the state after it; by default the following entry, `None` ends the workflow.
    `catch`: state name -> the error names (exception class names) that route there.
    `compensates`: the step this one undoes; once it completes, that step shows COMPENSATED.
    `record`: where its fence record lives when not in the fence table: one of `writes`, an item
    its (atomic) effect writes exactly once per run (`<prefix><token>` under the entity's
    partition), which then carries the record (no TTL, one write instead of a transaction with a
    record). Only for an item no other step or run writes.

    The declared effect: `writes`, the items it writes once per run (a run of a completed
    business entity has exactly one of each); `provider`, for a leased step, the external port it
    calls under its external key (at most one applied call per run); `status`, the entity's
    status its effect sets (its record is done exactly when the entity has that status).
    """

    name: str
    kind: Literal["atomic", "leased"]
    effect: str
    description: str
    ports: tuple[str, ...] = ()
    next: str | None = "following"
    catch: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reconcile: str | None = None
    compensates: str | None = None
    record: Item | None = None
    writes: tuple[Item, ...] = ()
    provider: str | None = None
    status: str | None = None
    timeout_seconds: int = STEP_TIMEOUT_SECONDS

    @property
    def reconciles(self) -> bool:
        """A leased step that looks its provider's effect up before calling again."""
        return self.reconcile is not None


@dataclass(frozen=True, kw_only=True)
class Consumer:
    """One consumer of the service's event: `name` is its function, its queue (with a DLQ
    `<name>-dlq` and its alarm) and its dedup namespace; `effect` `(tables, event) -> writes` is
    applied exactly once per fact; `tables` are the tables it writes; `writes`, the items it writes
    once per fact (its declared effect)."""

    name: str
    effect: str
    description: str
    tables: tuple[str, ...] = ()
    writes: tuple[Item, ...] = ()
    timeout_seconds: int = CONSUMER_TIMEOUT_SECONDS


@dataclass(frozen=True, kw_only=True)
class Route:
    """One operation of the REST API, served by the service's api function, described in its
    OpenAPI document and built at the edge from that document.

    `view` (`module:function`) gets the path parameters as keyword arguments and returns the
    success body (a model of the service's contract) or a whole response. `response` and
    `request` name contract models (the success body; the JSON body, validated at the edge).
    `idempotent`: the Idempotency-Key header is required (a replay carries `http.REPLAYED_HEADER`).
    `errors`: status -> the codes the view answers, besides those every operation may get.
    """

    method: str
    path: str
    operation_id: str
    view: str
    status: int
    description: str
    response: str
    request: str | None = None
    idempotent: bool = False
    errors: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """`METHOD /path`: the scope of an idempotent route's stored keys (`reliability.http`)."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True, kw_only=True)
class Entity:
    """The business entity a request creates and a workflow run carries: `name` (`order`), the
    prefix of its ids (`o-`), the table holding it (keyed `<name>#<id>` / `<name>`)."""

    name: str
    id_prefix: str
    table: str

    @property
    def id_field(self) -> str:
        """The field naming the entity in its run's queue message and workflow input (`<name>_id`)."""
        return f"{self.name}_id"

    def partition(self, entity_id: str) -> str:
        """The partition key of the entity and of every item an effect writes for it."""
        return f"{self.name}#{entity_id}"

    def id_for(self, stored_key: str) -> str:
        """The id of the entity a request with this stored (stage-, route- and caller-scoped)
        Idempotency-Key creates: its prefix and a digest of the key. Deterministic, so a client's
        retry after a crash between the entity's write and its message lands on the same entity,
        and an operator finds the entity a key created (`make story KEY=...`)."""
        return self.id_prefix + hashlib.sha256(stored_key.encode()).hexdigest()[:ENTITY_ID_HEX]


@dataclass(frozen=True, kw_only=True)
class Service:
    """Everything the tools need to know of a service, as data.

    `queue`: the API's queue to the worker (each consumer has its own, named after it).
    `proof`: the dotted name of the service's module of hooks for the lab (its own invariants
    beside the generic ones the declared effects give, the reference data it seeds; the lab's
    `ops.service.ServiceProof` lists them). Only the lab and tests import it; None: no hooks.
    `runtime`: the dotted name of the service's composition root, the module whose `Runtime` (a
    `reliability.runtime.Runtime`) and `RUNTIMES` (its `Runtimes`) the handlers use: what a cloud
    that runs the handlers in one process builds and scopes per function. None: none declared.
    """

    name: str
    entity: Entity
    tables: frozenset[str]
    queue: str
    steps: tuple[Step, ...]
    routes: tuple[Route, ...] = ()
    consumers: tuple[Consumer, ...] = ()
    events: str = EVENTS
    proof: str | None = None
    runtime: str | None = None

    def step_statuses(self, states: Mapping[str, str]) -> dict[str, StepStatus]:
        """Each step's status on a run, from its fence's state (`reliability.record.FenceState`,
        by step name; absent: never ran): COMPLETED is DONE, FAILED is FAILED, and a completed
        compensation marks the step it undoes (`Step.compensates`) COMPENSATED. Here, on the
        declaration, so a reader of statuses (an API's view, a tool) loads no saga."""
        statuses: dict[str, StepStatus] = {}
        for entry in self.steps:
            state = states.get(entry.name)
            if state == "COMPLETED":
                statuses[entry.name] = StepStatus.DONE
            elif state == "FAILED":
                statuses[entry.name] = StepStatus.FAILED
        for entry in self.steps:
            if entry.compensates and statuses.get(entry.name) is StepStatus.DONE:
                statuses[entry.compensates] = StepStatus.COMPENSATED
        return statuses

    def step(self, name: str) -> Step:
        for entry in self.steps:
            if entry.name == name:
                return entry
        raise KeyError(f"no step {name!r} in service {self.name!r}")

    def consumer(self, name: str) -> Consumer:
        for entry in self.consumers:
            if entry.name == name:
                return entry
        raise KeyError(f"no consumer {name!r} in service {self.name!r}")

    def next_of(self, step: Step) -> str | None:
        """Where `step` goes on success: its `next`, or the following entry by default."""
        if step.next != "following":
            return step.next
        names = [s.name for s in self.steps]
        index = names.index(step.name)
        if index + 1 == len(names):
            raise ValueError(f"{step.name} is the last step: give it next=None or a state name")
        return names[index + 1]

    def happy_path(self) -> tuple[str, ...]:
        """The step names from the first entry to the end, following `next` (no catches)."""
        path = [self.steps[0].name]
        while (following := self.next_of(self.step(path[-1]))) is not None:
            path.append(following)
        return tuple(path)

    def compensator_of(self, name: str) -> Step | None:
        """The step that undoes step `name`, if one is declared."""
        return next((s for s in self.steps if s.compensates == name), None)

    @property
    def queues(self) -> tuple[str, ...]:
        """Every queue the service declares, each with its DLQ: the API's, then one per consumer."""
        return (self.queue, *(c.name for c in self.consumers))


def function_name(step_name: str) -> str:
    """`HoldSeat` -> `hold-seat` (the function's name suffix)."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in step_name).lstrip("-")


def table_env(table: str) -> str:
    """The variable naming a table: `orders` -> ORDERS_TABLE, `fences` -> FENCE_TABLE."""
    return "FENCE_TABLE" if table == FENCES else f"{table.upper()}_TABLE"


def queue_env(queue: str) -> str:
    """The variable naming a queue's URL: `send-ticket` -> SEND_TICKET_QUEUE_URL, `send-ticket-dlq`
    -> SEND_TICKET_DLQ_URL."""
    base, dlq = (queue.removesuffix("-dlq"), True) if queue.endswith("-dlq") else (queue, False)
    return f"{base.upper().replace('-', '_')}_{'DLQ' if dlq else 'QUEUE'}_URL"
