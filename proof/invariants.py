"""The orders sample's own invariants, registered through its ONE hook, `violations` in its
declaration's proof module (`orders.workflow.SERVICE.proof`: `proof`), which the checker calls
with the table scans and the per-order counts, after the generic count of every declared item
(`ops.invariants.effects`).

It counts what the generic count cannot read (`COUNTS`): ChargePayment's effect is a succeeded
charge at the fake provider (a declined one is the provider's refusal, each call counted apart),
a notification counts its own repeated sends, an analytics marker lives in the event's partition,
not the order's. And it answers the rules over whole tables: one amount everywhere, stock
conserved, each day's counter equal to the events counted on it."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ops.invariants.effects import UNATTRIBUTED, Counts, refused, run_in, run_of
from orders import items as layout
from orders.domain import OrderStatus

Items = Callable[[str], list[dict[str, Any]]]
CHARGE_STEP, NOTIFY, ANALYTICS = "ChargePayment", "notify", "analytics"
# The entries whose effects this hook counts (the generic count leaves them to it).
COUNTS = frozenset({CHARGE_STEP, NOTIFY, ANALYTICS})
PROVIDER_CALLS = "provider calls"  # every call to the provider, attributed to no run


def violations(items: Items, counts: Counts) -> list[str]:
    """The hook: `items` scans a table by its short name (`ops.invariants.stores.table_scans`);
    the effects in `COUNTS` are counted into `counts` per order and run (what
    `rules.check_runs` holds each run to), and the rules over whole tables answered."""
    tally_payments(items("payments"), counts)
    tally_notifications(items("notifications"), counts)
    tally_aggregates(items("aggregates"), counts)
    orders = [i for i in items("orders") if i.get("sk") == layout.ORDER_SK]
    inventory, aggregates = items("inventory"), items("aggregates")
    return (
        check_day_counters(aggregates)
        + check_stock(inventory)
        + check_amounts(orders, items("payments"), items("ledger"), aggregates)
    )


def tally_payments(items: Iterable[Mapping[str, Any]], counts: Counts) -> None:
    """A succeeded charge is ChargePayment's effect, a declined one the provider's refusal; each
    call counts apart, with no run."""
    for item in items:
        order_id = layout.order_id_of(item["pk"])
        if order_id is None:
            continue
        if item["sk"].startswith(layout.CHARGE):
            # The charge's reference is its run's token (its idempotency key may be an earlier run's)
            effect = CHARGE_STEP if item.get("status") == "SUCCEEDED" else refused(CHARGE_STEP)
            counts[order_id][run_in(item.get("reference"))][effect] += 1
        elif item["sk"].startswith(layout.CALL):
            counts[order_id][UNATTRIBUTED][PROVIDER_CALLS] += 1


def tally_notifications(items: Iterable[Mapping[str, Any]], counts: Counts) -> None:
    """One item per event, counted as often as it was sent (a duplicate send is a count of 2)."""
    for item in items:
        order_id = layout.order_id_of(item["pk"])
        if order_id is not None and item["sk"].startswith(layout.NOTIFICATION):
            counts[order_id][run_of(item)][NOTIFY] += int(item.get(layout.SENDS, 1))


def tally_aggregates(items: Iterable[Mapping[str, Any]], counts: Counts) -> None:
    """Count each order's aggregate markers per run (a marker counted twice is two counts)."""
    for item in items:
        if item["sk"] == layout.MARKER_SK:
            counts[str(item.get("order_id"))][run_of(item)][ANALYTICS] += int(item.get(layout.COUNTED, 1))


def check_day_counters(items: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per day, the ADD counter must equal the events it counted (one marker per counted event)."""
    markers: Counter[str] = Counter()
    totals: dict[str, int] = {}
    for item in items:
        if item["sk"] == layout.MARKER_SK:
            markers[layout.day_pk(str(item["day"]))] += int(item.get(layout.COUNTED, 1))
        elif item["sk"] == layout.AGGREGATE_SK:
            totals[item["pk"]] = int(item.get("orders", 0))
    return [
        f"{day}: the counter says {total} order(s) but {markers[day]} event(s) were counted"
        for day, total in sorted(totals.items())
        if total != markers[day]
    ]


def _by_order(
    items: Iterable[Mapping[str, Any]], prefix: str, keep: Callable[[Mapping[str, Any]], bool]
) -> dict[str, list[tuple[str, int]]]:
    """(charge id, amount in cents) of each `prefix` row per order."""
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for item in items:
        order_id = layout.order_id_of(item["pk"]) or (str(item["order_id"]) if "order_id" in item else None)
        if order_id and item["sk"].startswith(prefix) and keep(item):
            amount = item.get("amount_cents", item.get("total_cents", -1))
            out[order_id].append((str(item.get("charge_id")), int(amount)))
    return out


def check_amounts(
    orders: Iterable[Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    ledger: Iterable[Mapping[str, Any]],
    aggregates: Iterable[Mapping[str, Any]],
) -> list[str]:
    """One amount everywhere: a COMPLETED order's total is what was charged, what the ledger
    recorded (against that charge's id) and what the daily aggregate counted for it."""
    charged = _by_order(payments, layout.CHARGE, lambda item: item.get("status") == "SUCCEEDED")
    entries = _by_order(ledger, layout.ENTRY, lambda _: True)
    counted = _by_order(aggregates, layout.MARKER_SK, lambda item: "total_cents" in item)
    violations: list[str] = []
    for order in orders:
        if order.get("status") != OrderStatus.COMPLETED:
            continue
        order_id, total = order["order_id"], int(order.get("total_cents", -1))
        charge_ids = {charge_id for charge_id, _ in charged[order_id]}
        for where, rows in (("charge", charged), ("ledger entry", entries), ("aggregate count", counted)):
            violations.extend(
                f"{order_id}: {where} of {amount} cents for an order total of {total}"
                for _, amount in rows[order_id]
                if amount != total
            )
        violations.extend(
            f"{order_id}: ledger entry against {charge_id}, not a succeeded charge of the order"
            for charge_id, _ in entries[order_id]
            if charge_id not in charge_ids
        )
    return violations


def net_by_sku(items: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """The net quantity the orders' reservations minus releases took, per sku."""
    net: Counter[str] = Counter()
    for item in items:
        kind = item.get("kind")
        if layout.order_id_of(item["pk"]) is None or kind not in ("reservation", "release"):
            continue
        sign = 1 if kind == "reservation" else -1
        for sku, quantity in (item.get("lines") or {}).items():
            net[sku] += sign * int(quantity)
    return net


def check_stock(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per sku, what stock fell by equals reservations minus releases."""
    net = net_by_sku(items)
    violations = []
    for item in items:
        if item.get("sk") != layout.CATALOG_SK or "seeded_stock" not in item:
            continue
        taken = int(item["seeded_stock"]) - int(item["stock"])
        if taken != net[item["sku"]]:
            violations.append(
                f"sku {item['sku']}: stock fell by {taken} but reservations minus releases are "
                f"{net[item['sku']]}"
            )
    return violations
