"""What the invariant checker says: a row per order (its effects counted, its violations) and the
report over every order, as text for an operator."""

from __future__ import annotations

from dataclasses import dataclass, field

from ops.invariants.stores import DeadLetter
from orders.domain import OrderStatus


@dataclass
class OrderRow:
    order_id: str
    status: str
    run: int = 1  # the order's current run; an earlier run's violations are prefixed with its number
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
