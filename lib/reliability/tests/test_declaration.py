"""reliability.declaration: a service's capabilities as plain data, importable by a CDK app."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import reliability
from reliability.declaration import (
    Consumer,
    Entity,
    Item,
    Route,
    Service,
    Step,
    function_name,
    queue_env,
    table_env,
)

SOURCE = Path(__file__).resolve().parents[1] / "src" / "reliability" / "declaration.py"
# The module mutmut 3.8.1 imports at the top of every module it rewrites with its mutants.
MUTMUT_TRAMPOLINE = "mutmut.mutation.trampoline"


def _service(*steps: Step, consumers: tuple[Consumer, ...] = ()) -> Service:
    return Service(
        name="bookings",
        entity=Entity(name="booking", id_prefix="b-", table="bookings"),
        tables=frozenset({"bookings", "seats", "tickets"}),
        queue="bookings",
        steps=steps,
        consumers=consumers,
    )


HOLD = Step(
    name="HoldSeat",
    kind="atomic",
    effect="bookings.effects:hold_seat",
    description="hold a seat",
    ports=("seats",),
    catch={"CancelBooking": ("SoldOut",)},
    writes=(Item("seats", "hold#"),),
)
PAY = Step(
    name="PayForSeat",
    kind="leased",
    effect="bookings.effects:pay",
    reconcile="bookings.effects:find_payment",
    description="take the money",
    catch={"ReleaseSeat": ("CardDeclined",)},
    provider="cards",
)
CONFIRM = Step(
    name="ConfirmBooking",
    kind="atomic",
    effect="bookings.effects:confirm",
    description="confirm",
    ports=("bookings",),
    next=None,
    status="CONFIRMED",
)
RELEASE = Step(
    name="ReleaseSeat",
    kind="atomic",
    effect="bookings.effects:release",
    description="release the seat",
    ports=("seats",),
    compensates="HoldSeat",
    next="CancelBooking",
)
FAILED = Step(
    name="CancelBooking",
    kind="atomic",
    effect="bookings.effects:cancel",
    description="cancel the booking",
    ports=("bookings",),
    next=None,
)
TICKET = Consumer(
    name="send-ticket",
    effect="bookings.effects:send_ticket",
    description="send the ticket",
    tables=("tickets",),
    writes=(Item("tickets", "ticket#"),),
)
SERVICE = _service(HOLD, PAY, CONFIRM, RELEASE, FAILED, consumers=(TICKET,))


def packages_imported(source: str) -> set[str]:
    """The top-level packages a module's source imports, leaving out the one import mutmut's
    rewrite of the module adds (`make mutation` runs these tests on that rewrite)."""
    tree = ast.parse(source)
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    return {name.split(".")[0] for name in imported - {MUTMUT_TRAMPOLINE}}


def test_the_declaration_imports_only_the_standard_library() -> None:
    # A CDK app loads a service's declaration as data: it must not pull in boto3, Powertools, pydantic
    assert packages_imported(SOURCE.read_text()) <= sys.stdlib_module_names | {"__future__"}


def test_the_import_check_reads_a_module_as_mutmut_rewrites_it_and_still_sees_the_rest() -> None:
    rewritten = (
        "from __future__ import annotations\nimport hashlib\n"
        f"from {MUTMUT_TRAMPOLINE} import wrap_in_trampoline as _mutmut_mutated, MutantDict\n"
    )
    assert packages_imported(rewritten) == {"__future__", "hashlib"}
    assert packages_imported(rewritten + "import boto3\nfrom mutmut import __main__\n") == {
        "__future__",
        "hashlib",
        "boto3",
        "mutmut",
    }


def test_the_types_are_public() -> None:
    for name in ("Service", "Entity", "Step", "Consumer", "Route", "Item"):
        assert name in reliability.__all__
        assert getattr(reliability, name) is getattr(reliability.declaration, name)


def test_the_happy_path_follows_next_from_the_first_step_to_the_end() -> None:
    assert SERVICE.happy_path() == ("HoldSeat", "PayForSeat", "ConfirmBooking")
    assert SERVICE.next_of(RELEASE) == "CancelBooking"
    assert SERVICE.next_of(FAILED) is None


def test_a_last_step_must_say_where_it_goes() -> None:
    dangling = Step(name="Only", kind="atomic", effect="m:f", description="d")
    with pytest.raises(ValueError, match="Only is the last step"):
        _service(dangling).next_of(dangling)


def test_lookups_name_the_service_when_an_entry_is_missing() -> None:
    assert SERVICE.step("PayForSeat") is PAY
    assert SERVICE.consumer("send-ticket") is TICKET
    with pytest.raises(KeyError, match="no step 'Nope' in service 'bookings'"):
        SERVICE.step("Nope")
    with pytest.raises(KeyError, match="no consumer 'nope' in service 'bookings'"):
        SERVICE.consumer("nope")


def test_declared_effects() -> None:
    # A step that writes items, a leased one that calls a provider and reconciles, a compensation
    assert HOLD.writes == (Item("seats", "hold#"),)
    assert not HOLD.reconciles
    assert (PAY.provider, PAY.reconciles) == ("cards", True)
    assert SERVICE.compensator_of("HoldSeat") is RELEASE
    assert SERVICE.compensator_of("PayForSeat") is None
    assert (CONFIRM.status, HOLD.status) == ("CONFIRMED", None)


def test_every_declared_queue_is_the_apis_then_one_per_consumer() -> None:
    assert SERVICE.queues == ("bookings", "send-ticket")


def test_entries_are_frozen_plain_data() -> None:
    with pytest.raises(AttributeError):
        HOLD.name = "Other"  # type: ignore[misc]
    assert _service(HOLD, PAY, CONFIRM, RELEASE, FAILED, consumers=(TICKET,)) == SERVICE


def test_a_route_is_scoped_by_method_and_path() -> None:
    route = Route(
        method="POST",
        path="/bookings",
        operation_id="createBooking",
        view="bookings.api:create",
        status=202,
        description="accepted",
        response="BookingAccepted",
    )
    assert route.name == "POST /bookings"


@pytest.mark.parametrize(
    ("name", "expected"), [("HoldSeat", "hold-seat"), ("CancelBooking", "cancel-booking")]
)
def test_a_step_function_is_the_kebab_case_of_its_state(name: str, expected: str) -> None:
    assert function_name(name) == expected


@pytest.mark.parametrize(("table", "variable"), [("bookings", "BOOKINGS_TABLE"), ("fences", "FENCE_TABLE")])
def test_table_variables(table: str, variable: str) -> None:
    assert table_env(table) == variable


@pytest.mark.parametrize(
    ("queue", "variable"),
    [("send-ticket", "SEND_TICKET_QUEUE_URL"), ("send-ticket-dlq", "SEND_TICKET_DLQ_URL")],
)
def test_queue_variables(queue: str, variable: str) -> None:
    assert queue_env(queue) == variable


def test_an_entitys_items_share_its_partition() -> None:
    assert SERVICE.entity.partition("b-1") == "booking#b-1"


def test_an_entity_created_by_a_key_has_one_id_the_key_alone_gives() -> None:
    entity = SERVICE.entity
    first = entity.id_for("dev#POST /bookings#anonymous#key-1")
    # The prefix and a digest of the key: the same key the same id, another key another id, and
    # the id stays an execution name's part, "-r<run>" after it
    assert first == entity.id_for("dev#POST /bookings#anonymous#key-1")
    assert first != entity.id_for("dev#POST /bookings#anonymous#key-2")
    assert first.startswith("b-")
    assert re.fullmatch(r"b-[0-9a-f]{32}", first)


def test_a_step_or_consumer_is_found_by_its_own_name() -> None:
    assert [SERVICE.step(name).name for name in ("PayForSeat", "HoldSeat")] == ["PayForSeat", "HoldSeat"]
    with pytest.raises(KeyError, match="no step 'Nope' in service 'bookings'"):
        SERVICE.step("Nope")
