"""The declarations of orders.workflow: stdlib + reliability.declaration only, and every entry
resolves to what it says."""

from __future__ import annotations

import ast
import inspect
import sys
from datetime import datetime
from pathlib import Path

import pytest

from orders import items, workflow
from orders.consumers import effect_of
from orders.domain import StepStatus
from orders.saga import AtomicStep, LeasedStep, SagaContext, record_on, steps
from reliability.declaration import StepStatus as LibraryStepStatus

WORKFLOW_SOURCE = Path(workflow.__file__)


def test_the_declarations_import_only_the_standard_library_and_the_declaration_types():
    # infra/ loads this file as data: it must never pull in boto3, Powertools, pydantic or CDK
    tree = ast.parse(WORKFLOW_SOURCE.read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    outside_stdlib = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside_stdlib <= {"__future__", "reliability.declaration"}


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


def test_the_service_gathers_the_entries():
    service = workflow.SERVICE
    assert (service.steps, service.routes, service.consumers) == (
        workflow.STEPS,
        workflow.ROUTES,
        workflow.CONSUMERS,
    )
    assert service.tables == workflow.TABLES
    assert service.entity.table in service.tables
    assert service.queues == ("orders", *(c.name for c in workflow.CONSUMERS))
    assert items.order_pk("o-1") == service.entity.partition("o-1")


@pytest.mark.parametrize("entry", [s for s in workflow.STEPS if s.record], ids=lambda s: s.name)
def test_a_carried_record_is_on_an_item_its_step_declares_it_writes(entry: workflow.Step):
    assert entry.record in entry.writes
    carriers = {(c.table, c.sk_prefix) for c in items.CARRIERS.values()}
    assert entry.record is not None
    assert (entry.record.table, entry.record.prefix) in carriers


@pytest.mark.parametrize("entry", [s for s in workflow.STEPS if s.record], ids=lambda s: s.name)
def test_the_runner_writes_a_carried_record_where_the_readers_look_for_it(entry: workflow.Step):
    # The library's runner (record_on) and the sample's readers (items.record_at) agree on the key
    assert entry.record is not None
    ctx = SagaContext(stage="dev", clock=datetime.now, tables={entry.record.table: "physical"})
    carried = record_on(ctx, entry.name, "o-1", "dev.o-1.r1")
    read = items.record_at(entry.name, order_id="o-1", token="dev.o-1.r1", fence_id="unused")
    assert carried is not None
    assert (carried.table, carried.key) == ("physical", read.key)
    assert read.table == entry.record.table


def test_the_contract_shows_the_librarys_step_statuses():
    assert StepStatus is LibraryStepStatus


def test_a_leased_step_declares_the_port_it_calls():
    assert all(s.provider in s.ports for s in workflow.STEPS if s.kind == "leased")
    assert all(s.provider is None for s in workflow.STEPS if s.kind == "atomic")
