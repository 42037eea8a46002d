"""The workflow's outcomes come from its declaration (the happy path, one per catch route), the
requests for each from the service's proof, and the fault search draws those; the fault search,
the API fuzz and the demo name no route, body or reference data of the sample."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ops.outcomes import Outcome, entity_route, id_field, outcomes, request_factory, starting_route
from orders.workflow import SERVICE
from reliability.declaration import Entity, Route, Service, Step
from tests.unit.test_library_is_generic import declared_names

ROOT = Path(__file__).resolve().parents[3]
# The lab's modules that place and judge requests: they take everything of the service from its
# declaration and proof.
GENERIC = (
    "lab/src/chaos/scenarios.py",
    "lab/src/chaos/exchanges.py",
    "lab/src/chaos/callers.py",
    "lab/src/chaos/draw.py",
    *(str(path.relative_to(ROOT)) for path in sorted((ROOT / "lab" / "src" / "ops" / "fuzz").glob("*.py"))),
    *(str(path.relative_to(ROOT)) for path in sorted((ROOT / "lab" / "src" / "ops" / "demo").glob("*.py"))),
)


def _wallet() -> Service:
    """A wallet transfer: debit, credit (an unknown payee refunds the debit), done."""
    steps = (
        Step(
            name="Debit",
            kind="atomic",
            effect="m:debit",
            description="debit",
            catch={"Rejected": ("InsufficientFunds", "AccountFrozen")},
        ),
        Step(
            name="Credit",
            kind="leased",
            effect="m:credit",
            description="credit",
            catch={"Refund": ("UnknownPayee",)},
        ),
        Step(name="Settle", kind="atomic", effect="m:settle", description="s", next=None, status="SETTLED"),
        Step(name="Refund", kind="atomic", effect="m:refund", description="r", compensates="Debit"),
        Step(
            name="Rejected", kind="atomic", effect="m:reject", description="j", next=None, status="REJECTED"
        ),
    )
    routes = (
        Route(
            method="POST",
            path="/transfers",
            operation_id="createTransfer",
            view="m:create",
            status=202,
            description="d",
            response="TransferAccepted",
            idempotent=True,
        ),
        Route(
            method="GET",
            path="/transfers/{transfer_id}",
            operation_id="getTransfer",
            view="m:get",
            status=200,
            description="d",
            response="TransferView",
        ),
    )
    return Service(
        name="wallet",
        entity=Entity(name="transfer", id_prefix="t-", table="transfers"),
        tables=frozenset({"transfers", "accounts"}),
        queue="transfers",
        steps=steps,
        routes=routes,
    )


def test_a_workflow_has_its_happy_path_and_one_outcome_per_catch_route():
    assert outcomes(_wallet()) == (
        Outcome("settled", ("Debit", "Credit", "Settle"), "SETTLED"),
        Outcome("insufficient-funds", ("Debit", "Rejected"), "REJECTED", "InsufficientFunds", "Debit"),
        Outcome(
            "unknown-payee", ("Debit", "Credit", "Refund", "Rejected"), "REJECTED", "UnknownPayee", "Credit"
        ),
    )


def test_the_routes_and_the_id_field_come_from_the_declaration():
    wallet = _wallet()
    assert starting_route(wallet).path == "/transfers"
    reading = entity_route(wallet)
    assert reading is not None
    assert reading.path == "/transfers/{transfer_id}"
    assert id_field(wallet) == "transfer_id"


def test_the_sample_proof_builds_a_request_for_each_of_its_outcomes():
    names = [outcome.name for outcome in outcomes(SERVICE)]
    assert names == ["completed", "out-of-stock", "payment-declined"]
    request = request_factory(SERVICE)
    for name in names:
        assert request(name, 0) != request(name, 0, 1)  # a variant is another payload
    with pytest.raises(KeyError):
        request("no-such-outcome", 0)


def test_the_fault_search_draws_the_declared_outcomes():
    from chaos.draw import KINDS  # noqa: PLC0415 - imports the assembly's helpers

    assert tuple(outcome.name for outcome in outcomes(SERVICE)) == KINDS


def _sample_words() -> re.Pattern[str]:
    """The sample's steps, functions, consumers and tables (`test_library_is_generic`), the words
    of its requests' bodies (`proof.requests`) and its routes' paths."""
    names = declared_names(SERVICE) | {"sku", "catalog", "declined"}
    paths = {route.path.split("{")[0].rstrip("/") for route in SERVICE.routes}
    words = r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b"
    return re.compile(words + "|" + "|".join(sorted(map(re.escape, paths))), re.IGNORECASE)


@pytest.mark.parametrize("path", GENERIC)
def test_the_fault_search_names_nothing_of_the_sample(path: str):
    words = _sample_words()
    assert words.search("POST /orders")
    assert words.search("ChargePayment")
    found = [
        f"{path}:{number}: {line.strip()}"
        for number, line in enumerate((ROOT / path).read_text().splitlines(), start=1)
        if words.search(line)
    ]
    assert found == []
