"""ops.service: the tools find the service's declaration by one setting, and a step's record from
the declaration alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ops.service import ServiceNotFound, record_at, record_tables, service, step_statuses, story_total
from orders import items, saga, workflow
from reliability import FenceState
from reliability.declaration import Entity, Item, Service, Step, StepStatus


def _pyproject(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(body)
    return path


def test_the_setting_names_the_samples_declaration():
    assert service() is workflow.SERVICE


def test_a_missing_setting_says_what_to_write(tmp_path: Path):
    with pytest.raises(ServiceNotFound, match=r"\[tool.retrysafe\] service"):
        service(_pyproject(tmp_path, "[tool.other]\nx = 1\n"))


def test_a_setting_that_names_no_service_is_refused(tmp_path: Path):
    with pytest.raises(ServiceNotFound, match=r"is not a reliability\.declaration\.Service"):
        service(_pyproject(tmp_path, '[tool.retrysafe]\nservice = "orders.workflow:STEPS"\n'))


HOLD = Step(
    name="HoldSeat",
    kind="atomic",
    effect="bookings.effects:hold",
    description="hold",
    record=Item("seats", "hold#"),
    writes=(Item("seats", "hold#"),),
)
PAY = Step(name="Pay", kind="leased", effect="bookings.effects:pay", description="pay", next=None)
BOOKINGS = Service(
    name="bookings",
    entity=Entity(name="booking", id_prefix="b-", table="bookings"),
    tables=frozenset({"bookings", "seats"}),
    queue="bookings",
    steps=(HOLD, PAY),
)


def test_a_steps_record_is_in_the_fence_table_or_on_the_item_it_declares():
    assert record_at(BOOKINGS, "Pay", entity_id="b-1", token="dev.b-1.r1", fence_id="f") == (
        "fences",
        {"id": {"S": "f"}},
    )
    assert record_at(BOOKINGS, "HoldSeat", entity_id="b-1", token="dev.b-1.r1", fence_id="f") == (
        "seats",
        {"pk": {"S": "booking#b-1"}, "sk": {"S": "hold#dev.b-1.r1"}},
    )
    assert record_tables(BOOKINGS) == ("fences", "seats")


@pytest.mark.parametrize("step", workflow.STEPS, ids=lambda s: s.name)
def test_the_samples_records_are_where_its_runtime_puts_them(step: workflow.Step):
    at = items.record_at(step.name, order_id="o-1", token="dev.o-1.r1", fence_id="f")
    assert record_at(workflow.SERVICE, step.name, entity_id="o-1", token="dev.o-1.r1", fence_id="f") == (
        at.table,
        at.key,
    )
    assert record_tables(workflow.SERVICE) == items.record_tables()


@pytest.mark.parametrize(
    "states",
    [
        {"ReserveInventory": "COMPLETED", "ChargePayment": "FAILED", "ReleaseInventory": "COMPLETED"},
        {"ReserveInventory": "COMPLETED", "ChargePayment": "COMPLETED", "RecordLedger": "IN_PROGRESS"},
        {},
    ],
)
def test_step_statuses_are_the_ones_the_samples_api_shows(states: dict[str, str]):
    shown = saga.step_statuses({step: FenceState(state) for step, state in states.items()})
    assert step_statuses(workflow.SERVICE, states) == {step: status.value for step, status in shown.items()}


def _imports_the_samples_declaration(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name == "orders.workflow" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.module == "orders.workflow" or (
            node.module == "orders" and any(alias.name == "workflow" for alias in node.names)
        )
    return False


def test_no_operator_tool_imports_the_samples_declaration_but_through_the_setting():
    # The tools find the service by `[tool.retrysafe] service` (ops.service), never by name
    ops = Path(__file__).resolve().parents[3] / "lab" / "src" / "ops"
    importing = sorted(
        str(module.relative_to(ops.parent))
        for module in ops.rglob("*.py")
        if any(map(_imports_the_samples_declaration, ast.walk(ast.parse(module.read_text()))))
    )
    assert importing == []


def test_step_statuses_are_derived_by_the_declaration(monkeypatch: pytest.MonkeyPatch):
    """One mechanism: the tools' statuses come from `Service.step_statuses` (which the saga's GET
    uses too), not a copy of its rule."""
    everything_compensated = lambda _service, states: dict.fromkeys(states, StepStatus.COMPENSATED)  # noqa: E731
    monkeypatch.setattr(Service, "step_statuses", everything_compensated)
    assert step_statuses(workflow.SERVICE, {"ReserveInventory": "COMPLETED"}) == {
        "ReserveInventory": "COMPENSATED"
    }


def test_a_storys_total_is_the_services_own_line_or_nothing():
    # The lab knows no entity's fields: a wallet's story once showed "0.00" read from the sample's
    # total_cents and currency
    item = {"total_cents": 1299, "currency": "EUR", "amount": 7}
    assert story_total(workflow.SERVICE)(item) == "12.99 EUR"
    assert story_total(BOOKINGS)(item) == ""
