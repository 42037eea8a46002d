"""`make story` and `make fence-show` follow the service's declaration: a step added to it (and so
to the state machine) shows in the story with its attempts and its status, and fence-show offers
it. The declaration is built here, not the sample's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ops.idem import main as idem_main
from ops.service import service
from ops.stack_outputs import function_output, table_output
from ops.story.collect import Collector
from ops.story.logs import Invocation
from ops.story.model import StepState
from ops.story.text import render
from reliability.declaration import Entity, Item, Service, Step, function_name

STAGE_TOKEN = "dev.o-1.r1"
MACHINE = "arn:aws:states:us-east-1:1:stateMachine:sm"
SCREEN = Step(
    name="ScreenOrder",
    kind="atomic",
    effect="screening.effects:screen",
    description="screen the order",
    ports=("screens",),
    record=Item("screens", "screen#"),
    writes=(Item("screens", "screen#"),),
)


def _with_screen() -> Service:
    """The sample's declaration with one more step after its first one."""
    sample = service()
    return replace(
        sample,
        tables=sample.tables | {"screens"},
        steps=(sample.steps[0], SCREEN, *sample.steps[1:]),
    )


def _definition(declared: Service) -> dict[str, Any]:
    states: dict[str, Any] = {"Done": {"Type": "Succeed"}}
    for step in declared.steps:
        resource = f"arn:aws:lambda:us-east-1:1:function:fn-{function_name(step.name)}"
        states[step.name] = {"Type": "Task", "Resource": resource, "Next": declared.next_of(step) or "Done"}
    return {"StartAt": declared.steps[0].name, "States": states}


def _outputs(declared: Service) -> dict[str, str]:
    outputs = {table_output(t): t for t in (*declared.tables, "fences")}
    shorts = ("api", "worker", *(c.name for c in declared.consumers))
    shorts += tuple(function_name(s.name) for s in declared.steps)
    outputs.update({function_output(short): f"fn-{short}" for short in shorts})
    outputs["StateMachineArn"] = MACHINE
    return outputs


class _Dynamo:
    """The order COMPLETED; every step record it is asked for COMPLETED; nothing to scan."""

    def __init__(self, entity_table: str) -> None:
        self.entity_table = entity_table
        self.asked: list[tuple[str, str]] = []

    def get_item(self, *, TableName: str, Key: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        if TableName == self.entity_table:
            order = {"order_id": "o-1", "status": "COMPLETED", "run": "1", "created_at": "2026-11-01"}
            return {"Item": {k: {"S": v} for k, v in order.items()}}
        self.asked.append((TableName, json.dumps(Key, sort_keys=True)))
        return {"Item": {"state": {"S": "COMPLETED"}}}

    def query(self, **_: Any) -> dict[str, Any]:
        return {"Items": []}

    def scan(self, **_: Any) -> dict[str, Any]:
        return {"Items": []}


class _StepFunctions:
    def __init__(self, declared: Service) -> None:
        self.definition = json.dumps(_definition(declared))

    def describe_state_machine(self, **_: Any) -> dict[str, Any]:
        return {"definition": self.definition, "type": "STANDARD"}

    def describe_execution(self, *, executionArn: str) -> dict[str, Any]:
        if not executionArn.endswith(":o-1-r1"):
            raise ClientError({"Error": {"Code": "ExecutionDoesNotExist"}}, "DescribeExecution")
        when = datetime(2026, 11, 1, tzinfo=UTC)
        return {
            "executionArn": executionArn,
            "name": "o-1-r1",
            "status": "SUCCEEDED",
            "startDate": when,
            "stopDate": when,
            "input": json.dumps({"token": STAGE_TOKEN}),
        }

    def get_paginator(self, _name: str) -> Any:
        class Pages:
            def paginate(self, **_: Any) -> list[dict[str, Any]]:
                return [{"events": []}]

        return Pages()


class _Sqs:
    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {}


class _Logs:
    """One invocation of every step function, claimed and completed."""

    def invocations(self, functions: Mapping[str, str], needles: Sequence[str]) -> list[Invocation]:
        lines = [{"decision": "FenceClaimed", "token": STAGE_TOKEN}, {"decision": "FenceCompleted"}]
        steps = [short for short, physical in functions.items() if short.endswith("FunctionName")]
        return [Invocation(short, f"req-{short}", started=1.0, lines=lines) for short in steps]


def test_a_step_added_to_the_declaration_shows_in_the_story_with_its_attempt_and_status():
    # Given a declaration with one more step, and a stack whose state machine runs it
    declared = _with_screen()
    dynamo = _Dynamo(declared.entity.table)
    clients = {"dynamodb": dynamo, "stepfunctions": _StepFunctions(declared), "sqs": _Sqs()}
    # When its story is collected under that declaration
    collector = Collector(
        outputs=_outputs(declared), client=clients.__getitem__, logs=_Logs(), declared=declared
    )
    story = collector.collect("o-1")
    # Then the new step is in the graph, ran once, and its record (on the item it declares) says DONE
    assert story.steps.index("ScreenOrder") == 1
    assert story.step_state("ScreenOrder") is StepState.RAN
    assert story.facts["step_statuses"]["ScreenOrder"] == "DONE"
    screen_key = {"pk": {"S": "order#o-1"}, "sk": {"S": f"screen#{STAGE_TOKEN}"}}
    assert ("screens", json.dumps(screen_key, sort_keys=True)) in dynamo.asked
    assert "ScreenOrder" in render(story, color=False)


def test_fence_show_offers_every_declared_step(capsys: Any):
    with pytest.raises(SystemExit):
        idem_main(["fence-show", "--help"], declared=_with_screen())
    assert "ScreenOrder" in capsys.readouterr().out


class _DynamoWithItems(_Dynamo):
    """As `_Dynamo`, and one item under every sort key prefix a query asks for."""

    def query(self, **kwargs: Any) -> dict[str, Any]:
        prefix = kwargs["ExpressionAttributeValues"][":prefix"]["S"]
        return {"Items": [{"pk": {"S": "transfer#t-1"}, "sk": {"S": f"{prefix}r1"}}]}


def test_a_service_without_the_samples_tables_gets_its_declared_effects_in_its_story():
    # Given a service of another domain (no payments table, no proof hooks) whose step writes a debit
    debit = Step(
        name="DebitWallet",
        kind="atomic",
        effect="wallets.effects:debit",
        description="debit the source wallet",
        ports=("wallets",),
        next=None,
        writes=(Item("wallets", "debit#"),),
    )
    declared = replace(
        service(),
        name="wallet",
        entity=Entity(name="transfer", id_prefix="t-", table="transfers"),
        tables=frozenset({"wallets", "transfers"}),
        steps=(debit,),
        consumers=(),
        proof=None,
    )
    clients = {
        "dynamodb": _DynamoWithItems("transfers"),
        "stepfunctions": _StepFunctions(declared),
        "sqs": _Sqs(),
    }
    # When its story is collected
    collector = Collector(
        outputs=_outputs(declared), client=clients.__getitem__, logs=_Logs(), declared=declared
    )
    story = collector.collect("t-1")
    # Then its facts are its declared effect's items, and no provider it does not have
    assert story.facts["effects"] == {"DebitWallet": 1}
    assert story.facts["providers"] == {}
    assert "effects: DebitWallet 1" in render(story, color=False)
