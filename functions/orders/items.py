"""The business items' keys, spelled once (DEVELOPERS.md, "Business items"; tables keyed pk + sk).

- orders:        `order#<id>` / `order` (the order; a step's status is its fence record)
- inventory:     `sku#<sku>` / `catalog` (price, stock, seeded_stock),
                 `order#<id>` / `reservation#<token>` and `release#<token>`
- payments:      `order#<id>` / `charge#<key>[#<n>]`, `order#<id>` / `call#<time>#<uuid>`
- ledger:        `order#<id>` / `entry#<token>`
- notifications: `order#<id>` / `notification#<event id>` (one per event; `sends` counts its sends,
                 so a duplicate is visible; it carries the notify consumer's dedup record)
- daily-aggregates: `day#<yyyy-mm-dd>` / `total` (the ADD counter),
                 `event#<event id>` / `marker` (one per counted event, whatever day it is counted on,
                 with its `day`; `counted` says how often, so a duplicate is visible; it carries the
                 analytics consumer's dedup record, so its key must not depend on the day)

Standard library only: the adapters, the ops tools, the simulator and chaos all import it.
"""

from __future__ import annotations

from typing import Any

ORDER_SK = "order"
CATALOG_SK = "catalog"
AGGREGATE_SK = "total"
RESERVATION = "reservation#"
RELEASE = "release#"
CHARGE = "charge#"
CALL = "call#"
ENTRY = "entry#"
NOTIFICATION = "notification#"
SENDS = "sends"  # a notification's send count
COUNTED = "counted"  # how often an event marker was counted
EVENT = "event#"
MARKER_SK = "marker"
_ORDER = "order#"


def order_pk(order_id: str) -> str:
    return f"{_ORDER}{order_id}"


def order_id_of(pk: str) -> str | None:
    """The order id of an `order#<id>` partition key, else None."""
    return pk.removeprefix(_ORDER) if pk.startswith(_ORDER) else None


def sku_pk(sku: str) -> str:
    return f"sku#{sku}"


def day_pk(day: str) -> str:
    return f"day#{day}"


def event_pk(event_id: str) -> str:
    return f"{EVENT}{event_id}"


def key(pk: str, sk: str) -> dict[str, Any]:
    """The low-level client's key: `{"pk": {"S": pk}, "sk": {"S": sk}}`."""
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def catalog_key(sku: str) -> dict[str, Any]:
    return key(sku_pk(sku), CATALOG_SK)


def order_key(order_id: str) -> dict[str, Any]:
    return key(order_pk(order_id), ORDER_SK)
