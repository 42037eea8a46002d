"""Gather one entity's story from the stores, the execution history and the function logs.

Every source is read through the target's clients (`ops.target.Target`), so the same code reads
the local cloud and a deployed stage; only the log source differs (`ops.story.logs`). On an
Express state machine there is no execution history (nor DescribeExecution, nor ListExecutions):
the executions are the worker's `ExecutionEnded` lines, the rest as on Standard (function logs and
step records). What the service is (its entity's table, its consumers, its steps' records and
statuses) is its declaration's (`ops.service`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import count
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from ops.invariants import Stores, check
from ops.service import record_at, service, step_statuses, story_facts, story_total
from ops.stack_outputs import function_output, table_output
from ops.story.entries import (
    API_FUNCTION,
    WORKER_FUNCTION,
    assign_executions,
    compensations,
    epoch,
    execution_entries,
    express_executions,
    failures,
    log_entries,
    run_tokens,
)
from ops.story.logs import LogSource
from ops.story.model import Story
from reliability.declaration import Service
from reliability.http import ANONYMOUS
from reliability.keys import derive_key
from reliability.saga import SAGA_NAMESPACE

_DESERIALIZER = TypeDeserializer()


def create_route(declared: Service | None = None) -> str:
    """The route whose stored HTTP key names an entity (its id is derived from the key): the
    service's idempotent route."""
    return next(route.name for route in (declared or service()).routes if route.idempotent)


def add_caller_argument(parser: argparse.ArgumentParser) -> None:
    """`--caller`: whose Idempotency-Key `--key` is (keys are scoped to the caller who sent them)."""
    parser.add_argument(
        "--caller",
        default=ANONYMOUS,
        help=f"with --key: who sent it (IAM ARN, or sub:<subject>); {ANONYMOUS} on the local cloud",
    )


class EntityNotFound(LookupError):
    pass


def record_location(
    outputs: Mapping[str, str], *, entity_id: str, token: str, step: str, declared: Service | None = None
) -> tuple[str, dict[str, Any]]:
    """(physical table, key) of a saga step's record on the run `token` of `entity_id`: where the
    declaration puts it (`ops.service.record_at`: the fence table, or the item that carries it)."""
    stage = token.split(".", 1)[0]
    fence_id = derive_key(SAGA_NAMESPACE, stage=stage, identity={"token": token, "step": step}).value
    table, key = record_at(declared or service(), step, entity_id=entity_id, token=token, fence_id=fence_id)
    return outputs[table_output(table)], key


def plain(item: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: _DESERIALIZER.deserialize(v) for k, v in (item or {}).items()}


@dataclass(frozen=True)
class Workflow:
    """The task states of the state machine definition and the edges between them."""

    start_at: str | None
    steps: list[str]
    functions: dict[str, str]  # step -> physical function name
    edges: list[tuple[str, str, str]]
    express: bool = False

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any], *, express: bool = False) -> Workflow:
        states: Mapping[str, Any] = definition.get("States", {})
        tasks = [name for name, state in states.items() if state.get("Type") == "Task"]
        functions = {}
        for name in tasks:
            state = states[name]
            resource = str((state.get("Parameters") or {}).get("FunctionName") or state.get("Resource", ""))
            functions[name] = resource.rsplit(":function:", maxsplit=1)[-1].split(":", maxsplit=1)[0]
        edges = []
        for name in tasks:
            state = states[name]
            if state.get("Next") in tasks:
                edges.append((name, str(state["Next"]), "next"))
            for catch in state.get("Catch", []):
                if catch.get("Next") in tasks:
                    edges.append(
                        (name, str(catch["Next"]), "catch " + ", ".join(catch.get("ErrorEquals", [])))
                    )
        return cls(
            start_at=definition.get("StartAt"), steps=tasks, functions=functions, edges=edges, express=express
        )


class Collector:
    """Reads one entity's story. `clients(name)` is a boto3 client factory for the target."""

    def __init__(
        self, *, outputs: Mapping[str, str], client: Any, logs: LogSource, declared: Service | None = None
    ) -> None:
        self.outputs = outputs
        self.declared = declared or service()
        self.ddb = client("dynamodb")
        self.sfn = client("stepfunctions")
        self.stores = Stores.from_outputs(outputs, client, declared=self.declared)
        self.logs = logs

    def entity_item(self, entity_id: str) -> dict[str, Any]:
        """The business entity's item (`<entity>#<id>` / `<entity>` in its table)."""
        entity = self.declared.entity
        table = self.outputs[table_output(entity.table)]
        key = {"pk": {"S": entity.partition(entity_id)}, "sk": {"S": entity.name}}
        item = self.ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        if not item:
            raise EntityNotFound(f"no {entity.name} {entity_id!r} in {table}")
        return plain(item)

    def items(self, table: str, entity_id: str, prefix: str) -> list[dict[str, Any]]:
        """The items under `prefix` in the entity's partition of a table (by its short name)."""
        items = self.ddb.query(
            TableName=self.outputs[table_output(table)],
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": {"S": self.declared.entity.partition(entity_id)},
                ":prefix": {"S": prefix},
            },
            ConsistentRead=True,
        )["Items"]
        return [plain(i) for i in items]

    def effects(self, entity_id: str) -> dict[str, int]:
        """Each declared effect's items in the entity's partition, by the step or consumer that
        writes them (their `writes`): how many of them the entity has."""
        writes = {s.name: s.writes for s in self.declared.steps}
        writes |= {c.name: c.writes for c in self.declared.consumers}
        return {
            entry: sum(len(self.items(item.table, entity_id, item.prefix)) for item in items)
            for entry, items in writes.items()
            if items
        }

    def workflow(self) -> Workflow:
        described = self.sfn.describe_state_machine(stateMachineArn=self.outputs["StateMachineArn"])
        return Workflow.from_definition(
            json.loads(described["definition"]), express=described.get("type") == "EXPRESS"
        )

    def executions(self, entity_id: str, runs: int) -> list[dict[str, Any]]:
        """Every execution of the entity's runs, by name (no listing of the whole state machine):
        `<id>-r<run>` (reliability.workflow_runs.execution_name) and the local restarts `-restart-<n>`
        (ops.redrive; on AWS a redrive keeps the execution)."""
        prefix = self.outputs["StateMachineArn"].replace(":stateMachine:", ":execution:")
        found = []
        for run in range(1, runs + 1):
            for restart in count():
                name = f"{entity_id}-r{run}" + (f"-restart-{restart}" if restart else "")
                try:
                    described = self.sfn.describe_execution(executionArn=f"{prefix}:{name}")
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                        break
                    raise
                history = self.sfn.get_paginator("get_execution_history").paginate(
                    executionArn=described["executionArn"]
                )
                events = [event for page in history for event in page["events"]]
                found.append({**described, "failures": failures(events)})
        return sorted(found, key=lambda e: epoch(e.get("startDate")) or 0)

    def express_executions(self, entity_id: str, runs: int) -> list[dict[str, Any]]:
        """Every Express execution of the entity's runs, as the worker logged their ends (Express
        keeps no history, and no execution API answers for one)."""
        worker = {WORKER_FUNCTION: self.outputs[function_output(WORKER_FUNCTION)]}
        return express_executions(self.logs.invocations(worker, [entity_id]), entity_id, runs)

    def fence(self, token: str, step: str, entity_id: str) -> dict[str, Any]:
        """The step's record on the run `token`, wherever the declaration puts it."""
        table, key = record_location(
            self.outputs, entity_id=entity_id, token=token, step=step, declared=self.declared
        )
        item = self.ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return plain(item) if item and "state" in item else {}

    def collect(self, entity_id: str) -> Story:
        item = self.entity_item(entity_id)
        workflow = self.workflow()
        runs = int(item.get("run", 1))
        # Express: read from the worker's lines below, with the rest of the logs
        executions = [] if workflow.express else self.executions(entity_id, runs)
        tokens = _tokens(executions)
        stored_key = str(item.get("idempotency_key") or "")
        # The consumers' functions by the short name their `<Name>FunctionName` output is built from
        consumers = (c.name for c in self.declared.consumers)
        physical = {f: self.outputs[function_output(f)] for f in (API_FUNCTION, WORKER_FUNCTION, *consumers)}
        short_of_step = {}
        for step, function in workflow.functions.items():
            short = next((k for k, v in self.outputs.items() if v == function), function)
            short_of_step[step] = short
            physical[short] = function
        step_of = {short: step for step, short in short_of_step.items()}
        needles = [entity_id, entity_id.removeprefix(self.declared.entity.id_prefix), stored_key, *tokens]
        invocations = self.logs.invocations(physical, needles)
        if workflow.express:  # an execution that has not ended yet: its steps name its token
            executions = express_executions(invocations, entity_id, runs)
            tokens = sorted(set(_tokens(executions)) | run_tokens(invocations, entity_id))
        entries = log_entries(invocations, step_of)
        entries += execution_entries(executions)
        fences = {step: self.fence(tokens[-1], step, entity_id) for step in workflow.steps} if tokens else {}
        # Each step's status on the latest run, derived from its fence as the entity's GET does it
        statuses = step_statuses(self.declared, {step: f["state"] for step, f in fences.items() if f})
        steps = {name: {"status": status} for name, status in statuses.items()}
        catch_targets = {to for _, to, kind in workflow.edges if kind.startswith("catch")}
        entries += compensations(steps, entries, catch_targets)
        assign_executions(entries, executions)
        entries.sort(key=lambda e: (e.at is None, e.at or 0))
        effects = self.effects(entity_id)
        report = check(self.stores, allow_in_flight=True)
        row = next((r for r in report.rows if r.entity_id == entity_id), None)
        return Story(
            entity_id=entity_id,
            status=str(item.get("status", "?")),
            run=int(item["run"]) if "run" in item else None,
            client_key=_client_key(stored_key),
            total=story_total(self.declared)(item),
            entries=entries,
            steps=workflow.steps,
            edges=workflow.edges,
            start_at=workflow.start_at,
            verdict=row.verdict if row else "not checked",
            violations=list(row.violations) if row else [],
            facts={
                "stored_key": stored_key,
                "tokens": tokens,
                "effects": effects,
                "providers": story_facts(self.declared)(
                    lambda table, prefix: self.items(table, entity_id, prefix)
                ),
                "step_statuses": dict(statuses),
                "fences": {
                    step: {k: f[k] for k in ("state", "fencing_token") if k in f}
                    for step, f in fences.items()
                    if f
                },
            },
        )


def _tokens(executions: list[dict[str, Any]]) -> list[str]:
    """The run tokens the executions' inputs carry."""
    return sorted({json.loads(e.get("input") or "{}").get("token", "") for e in executions} - {""})


def _client_key(stored_key: str) -> str | None:
    """The client's Idempotency-Key from a readable stored key (`http#<stage>#r1#v:{"key": ...}`)."""
    _, _, identity = stored_key.partition("#v:")
    try:
        return str(json.loads(identity)["key"]) if identity else None
    except (ValueError, KeyError, TypeError):
        return None
