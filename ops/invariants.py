"""The invariant checker: reads the stores and says, per order, whether every effect happened once.

    python -m ops.invariants            # against the target ops.target resolves; exit 1 on violations

Per order (see `_check_order`):
- stock decremented once: at most one reservation, and a FAILED order's reservation released
  (reservations minus releases is 0); per sku, `seeded_stock - stock` equals the sum of
  reservations minus releases of every order;
- exactly one succeeded charge at the provider for a COMPLETED order, none for a FAILED one
  (provider calls are counted too: more calls than charges is a deduped retry, not a violation);
- one ledger entry for COMPLETED, none for FAILED;
- one notification and the daily aggregate counted once for COMPLETED (or the event is in that
  consumer's DLQ with a reason); per day, the ADD counter equals the events it counted;
- every accepted order is COMPLETED, FAILED with its compensation done, or in the orders DLQ with
  a reason;
- one amount everywhere: a COMPLETED order's total equals its charge, its ledger entry (recorded
  against that succeeded charge's id) and what the daily aggregate counted for it;
- a dead letter excuses an unfinished order only when nothing it did is left standing (stock
  released, no charge, no ledger entry, no notification, not counted);
- steps agree with effects (a finished order, see `_check_steps`): no step recorded done without
  its effect, no effect without its step recorded done, a declined charge only on a FAILED order
  whose ChargePayment failed (at most one); a step's record is its fence on the order's run
  (`orders.saga.step_statuses`, what `GET /orders/{id}` shows). (The app has no refunds: a
  succeeded charge on a FAILED order is a violation.)

Works against anything boto3 reaches: moto in-process, the local cloud, or AWS. Only reads.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from ops.target import Target
from orders import items as layout
from orders.domain import OrderStatus, StepStatus
from orders.saga import step_statuses
from reliability import FenceState
from reliability.keys import execution_token

_deserializer = TypeDeserializer()
_DLQ_PEEK_ROUNDS = 10


@dataclass(frozen=True)
class Stores:
    """Where to read: boto3 clients and the physical names (stack outputs contract)."""

    dynamodb: Any
    sqs: Any
    orders_table: str
    inventory_table: str
    payments_table: str
    ledger_table: str
    notifications_table: str
    aggregates_table: str
    orders_dlq_url: str | None = None
    notify_dlq_url: str | None = None
    analytics_dlq_url: str | None = None
    fence_table: str | None = None

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, str], client: Callable[[str], Any]) -> Stores:
        return cls(
            dynamodb=client("dynamodb"),
            sqs=client("sqs"),
            orders_table=outputs["OrdersTableName"],
            inventory_table=outputs["InventoryTableName"],
            payments_table=outputs["PaymentsTableName"],
            ledger_table=outputs["LedgerTableName"],
            notifications_table=outputs["NotificationsTableName"],
            aggregates_table=outputs["AggregatesTableName"],
            orders_dlq_url=outputs.get("OrdersDlqUrl"),
            notify_dlq_url=outputs.get("NotifyDlqUrl"),
            analytics_dlq_url=outputs.get("AnalyticsDlqUrl"),
            fence_table=outputs.get("FenceTableName"),
        )


@dataclass(frozen=True)
class DeadLetter:
    queue: str
    message_id: str
    order_id: str | None
    reason: str | None
    source: str | None
    body: str


@dataclass
class OrderRow:
    order_id: str
    status: str
    reservations: int = 0
    releases: int = 0
    charges: int = 0
    declined: int = 0
    provider_calls: int = 0
    ledger_entries: int = 0
    notifications: int = 0
    aggregate_counts: int = 0
    dead_letters: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def verdict(self) -> str:
        if self.violations:
            return "VIOLATION"
        if self.status == OrderStatus.COMPLETED:
            return "completed"
        if self.status == OrderStatus.FAILED:
            return "compensated" if self.releases else "failed"
        if self.dead_letters:
            return "dead-lettered"
        return "in flight"


@dataclass
class Report:
    orders: list[OrderRow]
    dead_letters: list[DeadLetter]
    global_violations: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        per_order = [f"{row.order_id}: {v}" for row in self.orders for v in row.violations]
        return per_order + self.global_violations

    @property
    def ok(self) -> bool:
        return not self.violations

    def row(self, order_id: str) -> OrderRow:
        return next(row for row in self.orders if row.order_id == order_id)

    def to_text(self) -> str:
        header = (
            f"{'order':<36} {'status':<10} {'res':>3} {'rel':>3} {'chg':>3} {'calls':>5} "
            f"{'ledg':>4} {'ntf':>3} {'agg':>3}  verdict"
        )
        lines = [header, "-" * len(header)]
        for r in self.orders:
            lines.append(
                f"{r.order_id:<36} {r.status:<10} {r.reservations:>3} {r.releases:>3} {r.charges:>3} "
                f"{r.provider_calls:>5} {r.ledger_entries:>4} {r.notifications:>3} {r.aggregate_counts:>3}  "
                f"{r.verdict}"
            )
        if self.dead_letters:
            lines.append("")
            lines.append("dead letters:")
            lines.extend(
                f"  {d.queue:<10} {d.message_id} order={d.order_id or '-'} reason={d.reason or '(none)'}"
                for d in self.dead_letters
            )
        lines.append("")
        if self.ok:
            lines.append(f"OK: {len(self.orders)} order(s), every invariant holds")
        else:
            lines.append(f"{len(self.violations)} VIOLATION(S):")
            lines.extend(f"  - {v}" for v in self.violations)
        return "\n".join(lines)


def _scan(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items.extend(
            {k: _plain(_deserializer.deserialize(v)) for k, v in item.items()}
            for item in page.get("Items", [])
        )
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if type(value).__name__ == "Decimal":
        return int(value)
    return value


def _order_id(pk: str) -> str | None:
    return layout.order_id_of(pk)


def peek_dead_letters(sqs: Any, queue_url: str, queue: str) -> list[DeadLetter]:
    """Read a DLQ without consuming it (visibility 0, deduplicated by message id)."""
    seen: dict[str, DeadLetter] = {}
    for _ in range(_DLQ_PEEK_ROUNDS):
        response = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        new = [m for m in messages if m["MessageId"] not in seen]
        for message in new:
            attributes = message.get("MessageAttributes") or {}
            body = message.get("Body", "")
            seen[message["MessageId"]] = DeadLetter(
                queue=queue,
                message_id=message["MessageId"],
                order_id=_body_order_id(body),
                reason=(attributes.get("reason") or {}).get("StringValue"),
                source=(attributes.get("source") or {}).get("StringValue"),
                body=body,
            )
        if not new:
            break
    return list(seen.values())


def _body_order_id(body: str) -> str | None:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return None
    value = data.get("order_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def check(stores: Stores, *, allow_in_flight: bool = False) -> Report:
    """Read every store and check the invariants. `allow_in_flight` tolerates ACCEPTED/RUNNING
    orders that are not (yet) dead-lettered, for checks taken while work is still moving."""
    db = stores.dynamodb
    order_items = _scan(db, stores.orders_table)
    orders = [i for i in order_items if i.get("sk") == "order"]
    fences = _fences(_scan(db, stores.fence_table)) if stores.fence_table else {}
    inventory = _scan(db, stores.inventory_table)
    aggregates = _scan(db, stores.aggregates_table)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    net_by_sku = _tally_inventory(inventory, counts)
    payments = _scan(db, stores.payments_table)
    ledger = _scan(db, stores.ledger_table)
    _tally_payments(payments, counts)
    _tally_rows(ledger, layout.ENTRY, "ledger", counts)
    _tally_rows(_scan(db, stores.notifications_table), layout.NOTIFICATION, "notification", counts)
    global_violations = _check_aggregates(aggregates, counts) + _check_stock(inventory, net_by_sku)
    global_violations += _check_amounts(orders, payments, ledger, aggregates)

    dead: list[DeadLetter] = []
    for name, url in (
        ("orders", stores.orders_dlq_url),
        ("notify", stores.notify_dlq_url),
        ("analytics", stores.analytics_dlq_url),
    ):
        if url:
            dead.extend(peek_dead_letters(stores.sqs, url, name))
    dead_by_order: dict[str, list[DeadLetter]] = defaultdict(list)
    for letter in dead:
        if letter.order_id:
            dead_by_order[letter.order_id].append(letter)

    rows = []
    for order in sorted(orders, key=lambda o: (o.get("created_at", ""), o["order_id"])):
        row = _check_order(
            order, counts[order["order_id"]], dead_by_order[order["order_id"]], allow_in_flight
        )
        if row.status in (OrderStatus.COMPLETED, OrderStatus.FAILED):
            row.violations.extend(_check_steps(row, _fences_of(order, fences)))
        elif dead_by_order[order["order_id"]] and (standing := _standing(row)):
            row.violations.append(
                f"{row.status}, in a DLQ, but {', '.join(standing)} still standing (not compensated)"
            )
        rows.append(row)
    known = {row.order_id for row in rows}
    global_violations.extend(
        f"{order_id}: effects recorded for an order that does not exist"
        for order_id in sorted(set(counts) - known)
    )
    return Report(orders=rows, dead_letters=dead, global_violations=global_violations)


def _tally_inventory(items: Iterable[Mapping[str, Any]], counts: dict[str, Counter[str]]) -> Counter[str]:
    """Count reservations/releases per order; return the net quantity taken per sku."""
    net_by_sku: Counter[str] = Counter()
    for item in items:
        order_id = _order_id(item["pk"])
        kind = item.get("kind")
        if order_id is None or kind not in ("reservation", "release"):
            continue
        counts[order_id][str(kind)] += 1
        sign = 1 if kind == "reservation" else -1
        for sku, quantity in (item.get("lines") or {}).items():
            net_by_sku[sku] += sign * int(quantity)
    return net_by_sku


def _tally_payments(items: Iterable[Mapping[str, Any]], counts: dict[str, Counter[str]]) -> None:
    for item in items:
        order_id = _order_id(item["pk"])
        if order_id is None:
            continue
        if item["sk"].startswith(layout.CHARGE):
            counts[order_id]["charge" if item.get("status") == "SUCCEEDED" else "declined"] += 1
        elif item["sk"].startswith(layout.CALL):
            counts[order_id]["call"] += 1


def _tally_rows(
    items: Iterable[Mapping[str, Any]], prefix: str, name: str, counts: dict[str, Counter[str]]
) -> None:
    for item in items:
        order_id = _order_id(item["pk"])
        if order_id is not None and item["sk"].startswith(prefix):
            counts[order_id][name] += 1


def _check_aggregates(items: Iterable[Mapping[str, Any]], counts: dict[str, Counter[str]]) -> list[str]:
    """Per day, the ADD counter must equal the events it counted (one marker per counted event)."""
    markers: Counter[str] = Counter()
    totals: dict[str, int] = {}
    for item in items:
        if item["sk"].startswith(layout.EVENT):
            counts[str(item.get("order_id"))]["aggregate"] += 1
            markers[item["pk"]] += 1
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
        order_id = _order_id(item["pk"]) or (str(item["order_id"]) if "order_id" in item else None)
        if order_id and item["sk"].startswith(prefix) and keep(item):
            amount = item.get("amount_cents", item.get("total_cents", -1))
            out[order_id].append((str(item.get("charge_id")), int(amount)))
    return out


def _check_amounts(
    orders: Iterable[Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    ledger: Iterable[Mapping[str, Any]],
    aggregates: Iterable[Mapping[str, Any]],
) -> list[str]:
    """One amount everywhere: a COMPLETED order's total is what was charged, what the ledger
    recorded (against that charge's id) and what the daily aggregate counted for it."""
    charged = _by_order(payments, layout.CHARGE, lambda item: item.get("status") == "SUCCEEDED")
    entries = _by_order(ledger, layout.ENTRY, lambda _: True)
    counted = _by_order(aggregates, layout.EVENT, lambda item: "total_cents" in item)
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


def _check_stock(items: Iterable[Mapping[str, Any]], net_by_sku: Counter[str]) -> list[str]:
    """Per sku, what stock fell by equals reservations minus releases."""
    violations = []
    for item in items:
        if item.get("sk") != layout.CATALOG_SK or "seeded_stock" not in item:
            continue
        taken = int(item["seeded_stock"]) - int(item["stock"])
        if taken != net_by_sku[item["sku"]]:
            violations.append(
                f"sku {item['sku']}: stock fell by {taken} but reservations minus releases are "
                f"{net_by_sku[item['sku']]}"
            )
    return violations


def _check_order(
    order: Mapping[str, Any], c: Counter[str], dead: Sequence[DeadLetter], allow_in_flight: bool
) -> OrderRow:
    row = OrderRow(
        order_id=order["order_id"],
        status=str(order.get("status")),
        reservations=c["reservation"],
        releases=c["release"],
        charges=c["charge"],
        declined=c["declined"],
        provider_calls=c["call"],
        ledger_entries=c["ledger"],
        notifications=c["notification"],
        aggregate_counts=c["aggregate"],
        dead_letters=[f"{d.queue}: {d.reason or '(no reason)'}" for d in dead],
    )
    v = row.violations
    for name, value in (
        ("reservations", row.reservations),
        ("releases", row.releases),
        ("charges", row.charges),
        ("ledger entries", row.ledger_entries),
        ("notifications", row.notifications),
        ("aggregate counts", row.aggregate_counts),
    ):
        if value > 1:
            v.append(f"{value} {name} (at most 1)")
    if row.releases > row.reservations:
        v.append("released more than it reserved")
    queues = {d.queue for d in dead if d.reason}
    if row.status == OrderStatus.COMPLETED:
        _expect_one(v, "reservation", row.reservations)
        _expect_one(v, "succeeded charge", row.charges)
        _expect_one(v, "ledger entry", row.ledger_entries)
        if row.releases:
            v.append("a COMPLETED order released its inventory")
        if row.notifications != 1 and "notify" not in queues:
            v.append(f"{row.notifications} notification(s), expected 1 (or the event dead-lettered)")
        if row.aggregate_counts != 1 and "analytics" not in queues:
            v.append(f"counted {row.aggregate_counts} time(s) in the daily aggregate, expected 1")
    elif row.status == OrderStatus.FAILED:
        if row.reservations != row.releases:
            v.append("FAILED but its reservation was not released (stock still taken)")
        for name, value in (
            ("succeeded charge(s)", row.charges),
            ("ledger entr(ies)", row.ledger_entries),
            ("notification(s)", row.notifications),
            ("aggregate count(s)", row.aggregate_counts),
        ):
            if value:
                v.append(f"FAILED but has {value} {name}")
    elif not queues and not allow_in_flight:
        v.append(f"{row.status}: neither completed, compensated, nor in a DLQ with a reason")
    return row


def _standing(row: OrderRow) -> list[str]:
    """What an unfinished order did that nothing undid."""
    left = {
        "stock taken": row.reservations - row.releases,
        "a succeeded charge": row.charges,
        "a ledger entry": row.ledger_entries,
        "a notification": row.notifications,
        "an aggregate count": row.aggregate_counts,
    }
    return [name for name, value in left.items() if value > 0]


# Each step's effect (`orders.workflow.STEPS` names them), as `OrderRow` counts it (None: the
# order's own status).
_EFFECT_OF_STEP: dict[str, tuple[str, str | None]] = {
    "ReserveInventory": ("a reservation", "reservations"),
    "ChargePayment": ("a succeeded charge", "charges"),
    "RecordLedger": ("a ledger entry", "ledger_entries"),
    "ReleaseInventory": ("a release", "releases"),
    "MarkCompleted": ("status COMPLETED", None),
    "MarkFailed": ("status FAILED", None),
}
_DONE = frozenset({StepStatus.DONE, StepStatus.COMPENSATED})
_STATUS_OF_STEP: dict[str, str] = {"MarkCompleted": OrderStatus.COMPLETED, "MarkFailed": OrderStatus.FAILED}


def _check_steps(row: OrderRow, fences: Mapping[str, str]) -> list[str]:
    """A finished order's steps (their fences) and effects tell one story."""
    steps = {
        name: status.value
        for name, status in step_statuses({step: FenceState(state) for step, state in fences.items()}).items()
    }
    v = []
    for step, (effect, counter) in _EFFECT_OF_STEP.items():
        happened = row.status == _STATUS_OF_STEP[step] if counter is None else getattr(row, counter) > 0
        done = steps.get(step) in _DONE
        if done and not happened:
            v.append(f"step {step} recorded {steps[step]} without {effect}")
        if happened and not done:
            v.append(f"{effect} without step {step} recorded done (it is {steps.get(step, 'absent')})")
    if row.declined > 1:
        v.append(f"{row.declined} declined charges (at most 1)")
    charge = steps.get("ChargePayment")
    if row.declined and (row.status != OrderStatus.FAILED or charge != StepStatus.FAILED):
        v.append(f"a declined charge on a {row.status} order whose ChargePayment is {charge}")
    return v


def _fences(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Saga fences by execution token: {token: {step: state}} (TTL may have deleted some)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for item in items:
        if "token" in item and "step" in item and "state" in item:
            out[str(item["token"])][str(item["step"])] = str(item["state"])
    return out


def _fences_of(order: Mapping[str, Any], fences: Mapping[str, dict[str, str]]) -> dict[str, str]:
    """The fences of the order's current run (its token; the stage is the token's first segment)."""
    for token, by_step in fences.items():
        stage = token.split(".", 1)[0]
        if token == execution_token(stage=stage, business_id=order["order_id"], run=int(order.get("run", 1))):
            return by_step
    return {}


def _expect_one(violations: list[str], name: str, value: int) -> None:
    if value != 1:
        violations.append(f"{value} {name}(s), expected 1")


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the order workflow's invariants.")
    parser.add_argument("--allow-in-flight", action="store_true", help="tolerate orders still running")
    parser.add_argument("--json", action="store_true", help="print the per-order rows as JSON")
    args = parser.parse_args(list(argv) if argv is not None else None)
    target = Target.resolve()
    report = check(Stores.from_outputs(target.outputs, target.client), allow_in_flight=args.allow_in_flight)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "violations": report.violations,
                    "orders": [{**vars(r), "verdict": r.verdict} for r in report.orders],
                },
                indent=2,
            )
        )
    else:
        print(report.to_text())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
