"""The declarations of orders.workflow: stdlib-only, and every entry resolves to what it says."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

from orders import workflow
from orders.consumers import effect_of
from orders.saga import AtomicStep, LeasedStep, steps

WORKFLOW_SOURCE = Path(workflow.__file__)


def test_the_declarations_import_only_the_standard_library():
    # infra/ loads this file as data: it must never pull in boto3, Powertools, pydantic or CDK
    tree = ast.parse(WORKFLOW_SOURCE.read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {name.split(".")[0] for name in imported} <= sys.stdlib_module_names | {"__future__"}


@pytest.mark.parametrize("entry", workflow.STEPS, ids=lambda s: s.name)
def test_each_step_resolves_to_an_effect_of_its_kind(entry: workflow.Step):
    step = steps()[entry.name]
    kind = AtomicStep if entry.kind == "atomic" else LeasedStep
    assert isinstance(step, kind)
    effect = step.build if isinstance(step, AtomicStep) else step.run
    # atomic: (ctx, order, request); leased: (ctx, order, request, external_key)
    assert len(inspect.signature(effect).parameters) == (3 if entry.kind == "atomic" else 4)


def test_external_effects_are_leased_and_dynamodb_only_effects_atomic():
    leased = {s.name for s in workflow.STEPS if s.kind == "leased"}
    assert leased == {"ChargePayment", "PublishEvents"}


@pytest.mark.parametrize("entry", workflow.CONSUMERS, ids=lambda c: c.name)
def test_each_consumer_resolves_to_an_effect(entry: workflow.Consumer):
    assert len(inspect.signature(effect_of(entry.name)).parameters) == 2


def test_the_happy_path_follows_next_from_the_first_entry_to_the_end():
    path = workflow.happy_path()
    assert path[0] == workflow.STEPS[0].name
    assert [workflow.next_of(workflow.step(a)) for a in path] == [*path[1:], None]


@pytest.mark.parametrize(
    ("name", "expected"), [("ReserveInventory", "reserve-inventory"), ("MarkFailed", "mark-failed")]
)
def test_a_step_function_is_the_kebab_case_of_its_state(name: str, expected: str):
    assert workflow.function_name(name) == expected


@pytest.mark.parametrize(
    ("queue", "env"),
    [
        ("notify", "NOTIFY_QUEUE_URL"),
        ("notify-dlq", "NOTIFY_DLQ_URL"),
        ("loyalty-points", "LOYALTY_POINTS_QUEUE_URL"),
    ],
)
def test_queue_variables(queue: str, env: str):
    assert workflow.queue_env(queue) == env
