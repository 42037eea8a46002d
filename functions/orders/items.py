"""The business items' keys, spelled once (docs/architecture.md, "Business items"; tables keyed pk + sk).

- orders:        `order#<id>` / `order` (the order; a step's status is its fence record)
- inventory:     `sku#<sku>` / `catalog` (price, stock, seeded_stock),
                 `order#<id>` / `reservation#<token>` (it carries ReserveInventory's record; a
                 record-only item there, without `kind`, is that step's FAILED record) and
                 `release#<token>`
- payments:      `order#<id>` / `charge#<key>[#<n>]`, `order#<id>` / `call#<time>#<uuid>`
- ledger:        `order#<id>` / `entry#<token>` (it carries RecordLedger's record)
- notifications: `order#<id>` / `notification#<event id>` (one per event; `sends` counts its sends,
                 so a duplicate is visible; it carries the notify consumer's dedup record)
- daily-aggregates: `day#<yyyy-mm-dd>` / `total` (the ADD counter),
                 `event#<event id>` / `marker` (one per counted event, whatever day it is counted on,
                 with its `day`; `counted` says how often, so a duplicate is visible; it carries the
                 analytics consumer's dedup record, so its key must not depend on the day)

Where each saga step's record lives is here too, once (`record_at`): a step whose
`orders.workflow.Step.record` declares one of `CARRIERS` has it on that business item (written by
its effect, one per run: keyed by order and execution token, no TTL), every other step in the
fence table (keyed by its fence id, with the fence TTL). Every reader (GET /orders/{id}, the ops
tools, the invariants) finds records through it.

Standard library only: the adapters, the ops tools, the simulator and chaos all import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orders import workflow

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


# The fence table's short name (orders.workflow.table_env, infra's data stack).
FENCES = "fences"


@dataclass(frozen=True)
class Carrier:
    """A kind of business item that carries the record of the step whose effect writes it: one
    per run of an order, `order#<id>` / `<sk_prefix><token>` in `table` (a short name)."""

    table: str
    sk_prefix: str

    def key(self, order_id: str, token: str) -> dict[str, Any]:
        return key(order_pk(order_id), f"{self.sk_prefix}{token}")


# The items a step's entry declares as its `record` (orders.workflow.Step; a test pins them equal).
CARRIERS: dict[str, Carrier] = {
    "reservation": Carrier("inventory", RESERVATION),
    "ledger-entry": Carrier("ledger", ENTRY),
}


@dataclass(frozen=True)
class RecordAt:
    """Where one step's record of one run is: a table (short name) and the item's key."""

    table: str
    key: dict[str, Any]

    @property
    def carried(self) -> bool:
        return self.table != FENCES


def carrier_of(step: str) -> Carrier | None:
    """The business item that carries `step`'s record, None when it is in the fence table."""
    record = workflow.step(step).record
    return Carrier(record.table, record.prefix) if record is not None else None


def record_at(step: str, *, order_id: str, token: str, fence_id: str) -> RecordAt:
    """THE map: where `step`'s record of the run `token` of `order_id` lives (`fence_id`: its
    fence key, `reliability.keys.derive_key` of the saga namespace; the id a carried record holds too)."""
    carrier = carrier_of(step)
    if carrier is None:
        return RecordAt(FENCES, {"id": {"S": fence_id}})
    return RecordAt(carrier.table, carrier.key(order_id, token))


def record_tables() -> tuple[str, ...]:
    """Every table that holds saga step records: the fence table and the carriers' tables."""
    carried = {s.record.table for s in workflow.STEPS if s.record is not None}
    return (FENCES, *sorted(carried))
