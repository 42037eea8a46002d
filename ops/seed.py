"""Load the committed catalog seed (`functions/orders/catalog_seed.json`) into an inventory table.

    python -m ops.seed                 # the target ops.target resolves (local cloud or AWS)
    python -m ops.seed --reset         # overwrite stock (breaks invariants of existing orders)

Each sku is written with `seeded_stock` = `stock`, the baseline the invariant checker compares
reservations and releases against. Without --reset an existing sku is left alone, so a second
seed of a live table changes nothing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from ops.target import Target
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reset", action="store_true", help="overwrite stock of existing skus")
    parser.add_argument("--table", help="inventory table name (default: the InventoryTableName output)")
    args = parser.parse_args(argv)
    target = Target.resolve()
    table = args.table or target.output("InventoryTableName")
    written = seed_inventory(target.client("dynamodb"), table, reset=args.reset)
    print(f"seeded {written} sku(s) into {table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
