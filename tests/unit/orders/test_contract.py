"""The public request contract (its JSON Schema, checked by plain Python) and its parsing into 4xx
domain errors."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders.contract import MAX_BODY_BYTES, CreateOrderRequest, OrderItem, parse_create_order
from orders.errors import InvalidRequest, MalformedBody

ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=64)
items = st.lists(
    st.tuples(ids, st.integers(1, 100)), min_size=1, max_size=50, unique_by=lambda line: line[0]
).map(lambda lines: [{"sku": sku, "quantity": quantity} for sku, quantity in lines])
bodies = st.fixed_dictionaries(
    {"customer_id": ids, "currency": st.from_regex(r"\A[A-Z]{3}\Z"), "items": items}
)


@given(bodies)
def test_every_body_within_the_contract_parses_and_round_trips(body):
    parsed = parse_create_order(json.dumps(body))
    assert parsed.model_dump() == body


@pytest.mark.parametrize(
    "change",
    [
        {"customer_id": ""},
        {"customer_id": "x" * 65},
        {"currency": "eur"},
        {"currency": "EURO"},
        {"items": []},
        {"items": [{"sku": "sku-1", "quantity": 1}] * 51},
        {"items": [{"sku": "", "quantity": 1}]},
        {"items": [{"sku": "s" * 65, "quantity": 1}]},
        {"items": [{"sku": "sku-1", "quantity": 0}]},
        {"items": [{"sku": "sku-1", "quantity": 101}]},
        {"items": [{"sku": "sku-1", "quantity": 1.5}]},
        {"items": [{"sku": "sku-1", "quantity": "1"}]},
        {"items": [{"sku": "sku-1", "quantity": True}]},
        {"items": [{"sku": "sku-1", "quantity": 1, "price": 1}]},
        {"discount": 10},
        {"customer_id": "with space"},
        {"customer_id": "caf\u00e9"},
        {"items": [{"sku": "sku\u0000", "quantity": 1}]},
        {"items": [{"sku": "sku-1", "quantity": 60}, {"sku": "sku-1", "quantity": 60}]},
    ],
)
def test_a_body_outside_the_contract_is_a_validation_error(change):
    body = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}], **change}
    with pytest.raises(InvalidRequest) as raised:
        parse_create_order(json.dumps(body))
    assert raised.value.status == 422
    assert ":" in str(raised.value)  # "<field path>: <problem>", without echoing the input


def test_a_repeated_sku_is_refused_naming_it():
    # Regression (root cause 1): merged lines above the quantity bound could not be read back
    body = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "a", "quantity": 60}] * 2}
    with pytest.raises(InvalidRequest, match="each sku may appear once; repeated: a"):
        parse_create_order(json.dumps(body))


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "  ",
        "{",
        "not json",
        b"\xff\xfe".decode("latin-1"),
        b'{"customer_id": "\xff"}',
        "\ud800",
        "[" * 100_000,  # deeper than the recursion limit, beyond the size bound
        "[" * 5_000,  # RecursionError within the size bound (root cause 2)
        '{"customer_id": "c", "n": ' + "9" * 5_000 + "}",  # ValueError: int longer than 4300 digits
        '{"customer_id": "' + "x" * MAX_BODY_BYTES + '"}',
    ],
)
def test_a_body_that_cannot_be_parsed_is_a_400_never_an_exception(text):
    with pytest.raises(MalformedBody) as raised:
        parse_create_order(text)
    assert raised.value.status == 400


@pytest.mark.parametrize("text", ["[]", "1", '"order"', "null"])
def test_json_that_is_not_an_object_is_a_422(text):
    with pytest.raises(InvalidRequest):
        parse_create_order(text)


def test_models_are_immutable():
    item = OrderItem(sku="sku-1", quantity=1)
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[item])
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.customer_id = "other"  # type: ignore[misc]
