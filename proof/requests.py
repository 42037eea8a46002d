"""The sample's requests per outcome of its workflow (`ops.outcomes`: `completed`, `out-of-stock`,
`payment-declined`), and the catalog changes a client's retries may meet.

The payment provider of the sample declines a customer whose id starts with `declined`
(`orders.providers`); `prepare` leaves one unit of the last sku, so an order of two of it is out
of stock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from orders.items import catalog_key
from proof.catalog import SeedItem, seed_inventory

_SCARCE = SeedItem(sku="sku-scarce", name="The last one", price_cents=990, stock=1)  # prepare adds it
_BODIES: dict[str, dict[str, Any]] = {
    "completed": {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": "sku-5", "quantity": 2}]},
    "payment-declined": {
        "customer_id": "declined-7",
        "currency": "EUR",
        "items": [{"sku": "sku-6", "quantity": 1}],
    },
    "out-of-stock": {
        "customer_id": "customer-2",
        "currency": "EUR",
        "items": [{"sku": _SCARCE.sku, "quantity": 2}],
    },
}
# How the catalog may change between a client's retries: a price up by 100 cents, a sku removed.
CHANGES = ("price-change", "remove-sku")


def request(outcome: str, index: int = 0, variant: int = 0) -> dict[str, Any]:
    """Order `index` of `outcome`; `variant` more of each item (another payload, same outcome)."""
    body = {**_BODIES[outcome], "items": [dict(item) for item in _BODIES[outcome]["items"]]}
    if outcome == "completed" and index:
        body["customer_id"] = f"customer-{index + 1}"
    if variant:
        body["items"] = [{**item, "quantity": item["quantity"] + variant} for item in body["items"]]
    return body


def prepare(dynamodb: Any, tables: Mapping[str, str]) -> None:
    """The scarce sku in the catalog with stock 1 (and `seeded_stock` 1) unless it is there."""
    seed_inventory(dynamodb, tables["inventory"], items=[_SCARCE])


def change(dynamodb: Any, tables: Mapping[str, str], body: Mapping[str, Any], kind: str) -> None:
    """The catalog changes under the order's first sku: `price-change` or `remove-sku`."""
    table, key = tables["inventory"], catalog_key(body["items"][0]["sku"])
    if kind == "price-change":
        with contextlib.suppress(dynamodb.exceptions.ConditionalCheckFailedException):
            dynamodb.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="ADD price_cents :more",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":more": {"N": "100"}},
            )
    elif kind == "remove-sku":
        dynamodb.delete_item(TableName=table, Key=key)
    else:
        raise ValueError(f"no catalog change {kind!r}")


def world_changed(dynamodb: Any, tables: Mapping[str, str], body: Mapping[str, Any]) -> bool:
    """The order's first sku left the catalog (a completed order may then fail, compensated)."""
    key = catalog_key(body["items"][0]["sku"])
    return "Item" not in dynamodb.get_item(TableName=tables["inventory"], Key=key)


def observe(dynamodb: Any, tables: Mapping[str, str], body: Mapping[str, Any]) -> dict[str, int]:
    """The stock of each sku the order names (absent: -1)."""
    stock = {}
    for item in body["items"]:
        found = dynamodb.get_item(
            TableName=tables["inventory"], Key=catalog_key(item["sku"]), ConsistentRead=True
        ).get("Item")
        stock[item["sku"]] = int(found["stock"]["N"]) if found else -1
    return stock


def provider_effects(view: Mapping[str, Any]) -> tuple[int, int]:
    """(calls the payment provider received, charges it made) for the order, as its view shows them."""
    return len(view.get("provider_calls", [])), len(view.get("charges", []))
