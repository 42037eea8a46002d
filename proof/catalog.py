"""The sample's reference data: the committed catalog (`functions/orders/catalog_seed.json`)
written into the inventory table, each sku with `seeded_stock` = `stock`, the baseline the
sample's invariants compare reservations and releases against (`proof.invariants`). Without
`reset` an existing sku is left alone, so a second seed of a live table changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from orders.items import catalog_key

SEED_FILE = Path(__file__).resolve().parent.parent / "functions" / "orders" / "catalog_seed.json"


@dataclass(frozen=True)
class SeedItem:
    sku: str
    name: str
    price_cents: int
    stock: int


def load_seed(path: Path = SEED_FILE) -> list[SeedItem]:
    data = json.loads(path.read_text())
    return [
        SeedItem(sku=i["sku"], name=i["name"], price_cents=int(i["price_cents"]), stock=int(i["stock"]))
        for i in data["items"]
    ]


def seed(dynamodb: Any, tables: Mapping[str, str], *, reset: bool = False) -> int:
    """The hook (`ops.seed.seed` calls it with the physical table names by short name)."""
    return seed_inventory(dynamodb, tables["inventory"], reset=reset)


def seed_inventory(
    client: Any, table_name: str, *, items: Sequence[SeedItem] | None = None, reset: bool = False
) -> int:
    """Write the catalog; returns how many skus were written (existing ones skipped unless reset)."""
    written = 0
    for item in items if items is not None else load_seed():
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "Item": {
                **catalog_key(item.sku),
                "sku": {"S": item.sku},
                "name": {"S": item.name},
                "price_cents": {"N": str(item.price_cents)},
                "stock": {"N": str(item.stock)},
                "seeded_stock": {"N": str(item.stock)},
            },
        }
        if not reset:
            kwargs["ConditionExpression"] = "attribute_not_exists(pk)"
        try:
            client.put_item(**kwargs)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            continue
        written += 1
    return written
