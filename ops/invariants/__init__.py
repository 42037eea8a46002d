"""The invariant checker: reads the stores and says, per order, whether every effect happened once.

    python -m ops.invariants            # against the target ops.target resolves; exit 1 on violations

Per order and run (`make rerun` starts run N+1 of a FAILED order; each effect item says its run, see
`rules.run_of`): the current run is judged by the order's status, each earlier run as the
compensated FAILED run it was, and an effect of a run the order never reached is a violation.
Per run (see `rules.check_order`):
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
- steps agree with effects (a finished order, see `rules.check_steps`): no step recorded done without
  its effect, no effect without its step recorded done, a declined charge only on a FAILED order
  whose ChargePayment failed (at most one); a step's record is where the declaration puts it for
  the run (`ops.service.record_at`: the fence table, or the item its effect writes; its status as
  `GET /orders/{id}` shows it, `ops.service.step_statuses`), and a step that sets a status
  (`Step.status`) is done exactly when the order has it. (The app has no refunds: a
  succeeded charge on a FAILED order is a violation.)

Counting each order's effects in the sample's tables, and the rules over whole tables (per sku,
per day, one amount everywhere), are the sample's own, called through its declaration's hook
(`Service.proof`: `proof.invariants`); the checker itself reads the declared entity, the
step records where the declaration puts them and every declared queue's DLQ.

Works against anything boto3 reaches: moto in-process, the local cloud, or AWS. Only reads.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from functools import partial
from typing import Any

from infra.config import FENCE_WINDOWS, outlived
from ops.invariants.report import OrderRow, Report
from ops.invariants.rules import Exemptions, check_runs, new_counts
from ops.invariants.stores import DeadLetter, Stores, fences_of, peek_dead_letters, step_records, table_scans
from ops.service import domain_invariants
from ops.target import Target

__all__ = ["DeadLetter", "OrderRow", "Report", "Stores", "check", "main", "peek_dead_letters"]


def check(stores: Stores, *, allow_in_flight: bool = False, left_to_operator: Collection[str] = ()) -> Report:
    """Read every store and check the invariants. `allow_in_flight` tolerates ACCEPTED/RUNNING
    orders that are not (yet) dead-lettered, for checks taken while work is still moving;
    `left_to_operator` tolerates them for those orders only (an operator's redrive was refused:
    past the windows in which a redrive or a restart is safe, finishing them is a person's
    decision). Every other rule still holds for them, and every rule honours the same exemptions
    (`rules.Exemptions`): these two, and fences TTL may have deleted once an order is old enough."""
    items = table_scans(stores)  # each table read once, whichever rules read it
    declared = stores.declared
    entity = declared.entity
    orders = [i for i in items(entity.table) if i.get("sk") == entity.name]
    fences = step_records(items, declared)
    counts = new_counts()
    # The service's own hook counts its effects per order and run and answers its rules over whole
    # tables (the sample's: amounts, stock, day counters)
    global_violations = domain_invariants(declared)(items, counts)

    dead: list[DeadLetter] = []
    for name, url in stores.dlq_urls.items():
        dead.extend(peek_dead_letters(stores.sqs, url, name))
    dead_by_order: dict[str, list[DeadLetter]] = defaultdict(list)
    for letter in dead:
        if letter.order_id:
            dead_by_order[letter.order_id].append(letter)

    rows = [
        check_runs(
            order,
            counts[order["order_id"]],
            dead_by_order[order["order_id"]],
            partial(fences_of, order, fences),
            Exemptions(
                unfinished_allowed=allow_in_flight or order["order_id"] in left_to_operator,
                fences_may_be_gone=older_than_fence_windows(order, stores.clock()),
            ),
        )
        for order in sorted(orders, key=lambda o: (o.get("created_at", ""), o["order_id"]))
    ]
    known = {row.order_id for row in rows}
    global_violations.extend(
        f"{order_id}: effects recorded for an order that does not exist"
        for order_id in sorted(set(counts) - known)
    )
    return Report(orders=rows, dead_letters=dead, global_violations=global_violations)


def older_than_fence_windows(order: dict[str, Any], now: float) -> bool:
    """Every fence of the order was written after it was created and must live at least the fence
    windows (infra.config; synth refuses a shorter TTL): younger than that, a missing fence is a
    violation; older, TTL may have deleted it."""
    created = datetime.fromisoformat(str(order["created_at"])).timestamp()
    return now - created >= outlived(FENCE_WINDOWS)


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
