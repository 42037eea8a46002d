"""The invariants themselves, over what `ops.invariants.stores` read: effects counted per order and
run, then each rule (per order and run, per step) as a list of violations. The sample's rules
over whole tables (amounts, stock, day counters) are its own hook's (`proof.invariants`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ops.invariants.report import OrderRow
from ops.invariants.stores import DeadLetter
from ops.service import service, step_statuses
from orders import items as layout
from orders.domain import OrderStatus, StepStatus
from reliability.declaration import Service
from reliability.keys import key_parts

# Effects counted per order id, then per run (`make rerun` starts run N+1 of a FAILED order, and
# each run has its own effects); run 0 holds what no run can be told from (a provider call).
Counts = dict[str, dict[int, Counter[str]]]
UNATTRIBUTED = 0


@dataclass(frozen=True)
class Exemptions:
    """What an order may not be held to, decided once per order (`ops.invariants.check`) and
    honoured by every rule through these two questions, never re-derived by a rule of its own.

    `unfinished_allowed`: the order may be neither finished nor excused by a dead letter (the check
    runs while work moves, or the order is left to an operator past the windows in which a redrive
    or a restart is safe: what it left standing is a person's to settle). `fences_may_be_gone`: the
    order is older than the windows its fences must outlive, so DynamoDB TTL may have deleted them
    and an absent fence is no evidence of anything."""

    unfinished_allowed: bool = False
    fences_may_be_gone: bool = False

    def absent_fence_excused(self, step: str, steps: Mapping[str, object]) -> bool:
        return self.fences_may_be_gone and step not in steps


NONE = Exemptions()


def new_counts() -> Counts:
    return defaultdict(lambda: defaultdict(Counter))


def run_of(item: Mapping[str, Any]) -> int:
    """The run an effect item belongs to, from the execution token or derived key it carries: a
    reservation's or release's `token`, a charge's `reference`, an event's `event_id` (notification,
    aggregate marker), else its sort key's tail (a ledger entry's `entry#<token>`)."""
    for value in (
        item.get("token"),
        item.get("reference"),
        item.get("event_id"),
        item["sk"].partition("#")[2],
    ):
        if value and (parts := key_parts(str(value))):
            return parts.run
    return UNATTRIBUTED


def tally_rows(
    items: Iterable[Mapping[str, Any]],
    prefix: str,
    name: str,
    counts: Counts,
    *,
    times: str | None = None,
) -> None:
    """Count an order's items under ``prefix``; each counts ``item[times]`` times when it says
    (a notification's ``sends``: one item per event, a duplicate send is a count of 2)."""
    for item in items:
        order_id = layout.order_id_of(item["pk"])
        if order_id is not None and item["sk"].startswith(prefix):
            counts[order_id][run_of(item)][name] += int(item.get(times, 1)) if times else 1


def check_order(
    order: Mapping[str, Any], c: Counter[str], dead: Sequence[DeadLetter], exempt: Exemptions = NONE
) -> OrderRow:
    row = OrderRow(
        order_id=order["order_id"],
        status=str(order.get("status")),
        run=int(order.get("run", 1)),
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
    elif not queues and not exempt.unfinished_allowed:
        v.append(f"{row.status}: neither completed, compensated, nor in a DLQ with a reason")
    return row


def left_standing(row: OrderRow) -> list[str]:
    """What an unfinished order did that nothing undid."""
    left = {
        "stock taken": row.reservations - row.releases,
        "a succeeded charge": row.charges,
        "a ledger entry": row.ledger_entries,
        "a notification": row.notifications,
        "an aggregate count": row.aggregate_counts,
    }
    return [name for name, value in left.items() if value > 0]


# Each item-writing step's effect, as `OrderRow` counts it. The steps that set the order's status
# are the declaration's (`Step.status`): done exactly when the order has that status.
_EFFECT_OF_STEP: dict[str, tuple[str, str]] = {
    "ReserveInventory": ("a reservation", "reservations"),
    "ChargePayment": ("a succeeded charge", "charges"),
    "RecordLedger": ("a ledger entry", "ledger_entries"),
    "ReleaseInventory": ("a release", "releases"),
}
_DONE = frozenset({StepStatus.DONE, StepStatus.COMPENSATED})


def check_steps(
    row: OrderRow, fences: Mapping[str, str], exempt: Exemptions = NONE, declared: Service | None = None
) -> list[str]:
    """A finished order's steps (their fences) and effects tell one story; an absent fence the
    exemptions excuse (`Exemptions.fences_may_be_gone`) is no evidence either way. `declared`:
    the service (default `ops.service.service()`), whose steps that set a status are checked
    against the order's."""
    declared = declared or service()
    steps = step_statuses(declared, fences)
    status_of = {s.name: s.status for s in declared.steps if s.status is not None}
    effects = {**_EFFECT_OF_STEP, **{step: (f"status {status}", "") for step, status in status_of.items()}}
    v = []
    for step, (effect, counter) in effects.items():
        happened = row.status == status_of[step] if not counter else getattr(row, counter) > 0
        done = steps.get(step) in _DONE
        if done and not happened:
            v.append(f"step {step} recorded {steps[step]} without {effect}")
        if happened and not done and not exempt.absent_fence_excused(step, steps):
            v.append(f"{effect} without step {step} recorded done (it is {steps.get(step, 'absent')})")
    if row.declined > 1:
        v.append(f"{row.declined} declined charges (at most 1)")
    charge = steps.get("ChargePayment")
    charge_failed = charge == StepStatus.FAILED or exempt.absent_fence_excused("ChargePayment", steps)
    if row.declined and (row.status != OrderStatus.FAILED or not charge_failed):
        v.append(f"a declined charge on a {row.status} order whose ChargePayment is {charge}")
    return v


def _expect_one(violations: list[str], name: str, value: int) -> None:
    if value != 1:
        violations.append(f"{value} {name}(s), expected 1")


def check_runs(
    order: Mapping[str, Any],
    runs: Mapping[int, Counter[str]],
    dead: Sequence[DeadLetter],
    fences_of_run: Callable[[int], Mapping[str, str]],
    exempt: Exemptions = NONE,
) -> OrderRow:
    """One order, run by run. Its current run is judged by the order's status (`check_order`, and
    `check_steps` once finished; a dead-lettered one only with nothing left standing). Each earlier
    run ended FAILED, since `make rerun` starts run N+1 only then: it must be a compensated FAILED
    run with its steps agreeing. No effect may belong to a run the order never reached. `exempt`
    holds for every run and every rule."""
    current = int(order.get("run", 1))
    row = check_order(order, runs.get(current, Counter()) + runs.get(UNATTRIBUTED, Counter()), dead, exempt)
    if row.status in (OrderStatus.COMPLETED, OrderStatus.FAILED):
        row.violations.extend(check_steps(row, fences_of_run(current), exempt))
    elif dead and not exempt.unfinished_allowed and (standing := left_standing(row)):
        row.violations.append(
            f"{row.status}, in a DLQ, but {', '.join(standing)} still standing (not compensated)"
        )
    for run in range(1, current):
        earlier = check_order({**order, "status": OrderStatus.FAILED}, runs.get(run, Counter()), (), exempt)
        earlier.violations.extend(check_steps(earlier, fences_of_run(run), exempt))
        row.violations.extend(f"run {run} (before the rerun): {v}" for v in earlier.violations)
    row.violations.extend(
        f"effects of run {run}, which the order never reached (it is on run {current}): {dict(counted)}"
        for run, counted in sorted(runs.items())
        if run > current and +counted
    )
    return row
