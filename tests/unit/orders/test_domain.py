"""Pure domain rules: pricing, ids, names, events."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders.contract import CreateOrderRequest, OrderItem
from orders.domain import (
    CatalogItem,
    Line,
    completed_event,
    completed_fact,
    execution_name,
    merged_items,
    new_order,
    order_id_for,
    price,
)
from orders.errors import UnknownSku

CATALOG = {f"sku-{n}": CatalogItem(sku=f"sku-{n}", price_cents=n * 100, stock=10) for n in range(1, 4)}
EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def test_price_uses_the_catalog_and_merges_repeated_skus():
    lines = price(
        [
            OrderItem(sku="sku-2", quantity=1),
            OrderItem(sku="sku-1", quantity=2),
            OrderItem(sku="sku-2", quantity=3),
        ],
        CATALOG,
    )
    assert lines == (Line("sku-2", 4, 200), Line("sku-1", 2, 100))
    assert sum(line.amount_cents for line in lines) == 1000


def test_every_unknown_sku_is_named():
    with pytest.raises(UnknownSku) as raised:
        price(
            [
                OrderItem(sku="nope", quantity=1),
                OrderItem(sku="sku-1", quantity=1),
                OrderItem(sku="gone", quantity=1),
            ],
            CATALOG,
        )
    assert raised.value.skus == ["nope", "gone"]
    assert "nope" in str(raised.value)
    assert "gone" in str(raised.value)
    assert raised.value.status == 422


@given(st.text(min_size=1, max_size=300), st.integers(1, 10_000))
def test_order_ids_are_deterministic_and_make_valid_execution_names(key, run):
    order_id = order_id_for(key)
    assert order_id == order_id_for(key)
    assert EXECUTION_NAME.match(execution_name(order_id, run))


def test_different_keys_give_different_orders():
    assert order_id_for("http#dev#r1#v:a") != order_id_for("http#dev#r1#v:b")


def test_merged_items_keeps_first_seen_order():
    assert merged_items(
        [OrderItem(sku="b", quantity=1), OrderItem(sku="a", quantity=1), OrderItem(sku="b", quantity=2)]
    ) == {
        "b": 3,
        "a": 1,
    }


def test_a_new_order_is_accepted_with_its_key_lineage():
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku="sku-3", quantity=2)])
    order = new_order(
        request=request,
        catalog=CATALOG,
        stored_idempotency_key="k",
        owner="caller-a",
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert order.order_id == order_id_for("k")
    assert order.idempotency_key == "k"
    assert order.total_cents == 600
    assert order.status == "ACCEPTED"
    assert order.created_at == "2026-01-01T00:00:00+00:00"


def test_the_completed_event_has_the_documented_shape_and_a_stable_id():
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku="sku-1", quantity=1)])
    order = new_order(
        request=request, catalog=CATALOG, stored_idempotency_key="k", owner="caller-a", now=datetime.now(UTC)
    )
    first = completed_fact(order.order_id, 1).id(stage="dev")
    again = completed_fact(order.order_id, 1).id(stage="dev")
    other_run = completed_fact(order.order_id, 2).id(stage="dev")
    other_stage = completed_fact(order.order_id, 1).id(stage="prod")
    assert first == again == f"OrderCompleted#dev#r1#v:{order.order_id}"
    assert len({first, other_run, other_stage}) == 3
    event = completed_event(stage="dev", order=order, run=1, occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert (event["event_id"], event["stage"]) == (first, "dev")
    assert set(event) == {
        "event_id",
        "stage",
        "type",
        "order_id",
        "run",
        "customer_id",
        "currency",
        "total_cents",
        "items",
        "occurred_at",
    }
    assert event["type"] == "OrderCompleted"
