"""The public request contract (pydantic v2 models) and its parsing into 4xx domain errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders.contract import CreateOrderRequest, OrderItem
from orders.errors import InvalidRequest, MalformedBody
from orders.service import parse_create_order

skus = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=64)
items = st.builds(lambda sku, q: {"sku": sku, "quantity": q}, skus, st.integers(1, 100))
bodies = st.fixed_dictionaries(
    {
        "customer_id": st.text(min_size=1, max_size=64),
        "currency": st.from_regex(r"\A[A-Z]{3}\Z"),
        "items": st.lists(items, min_size=1, max_size=50),
    }
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
    ],
)
def test_a_body_outside_the_contract_is_a_validation_error(change):
    body = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}], **change}
    with pytest.raises(InvalidRequest) as raised:
        parse_create_order(json.dumps(body))
    assert raised.value.status == 422
    assert ":" in str(raised.value)  # "<field path>: <problem>", without echoing the input


@pytest.mark.parametrize("text", [None, "", "{", "not json", b"\xff\xfe".decode("latin-1")])
def test_a_body_that_is_not_json_is_a_400(text):
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
    with pytest.raises(ValueError, match="frozen"):
        request.customer_id = "other"
