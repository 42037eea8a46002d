"""What the invariant checker says: a row per business entity (its effects counted per declared
entry, its violations) and the report over every entity, as text for an operator."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ops.invariants.stores import DeadLetter


@dataclass
class EntityRow:
    entity_id: str
    status: str
    run: int = 1  # the entity's current run; an earlier run's violations are prefixed with its number
    # The current run's effects by the entry that applied them (`ops.invariants.effects`).
    effects: Counter[str] = field(default_factory=Counter)
    # How the run ended, as the declaration reads its status (`Effects.completed`, `.failed`).
    outcome: str = "unfinished"  # completed | failed | compensated | unfinished
    dead_letters: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def verdict(self) -> str:
        if self.violations:
            return "VIOLATION"
        if self.outcome != "unfinished":
            return self.outcome
        if self.dead_letters:
            return "dead-lettered"
        return "in flight"


@dataclass
class Report:
    rows: list[EntityRow]
    dead_letters: list[DeadLetter]
    global_violations: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        per_entity = [f"{row.entity_id}: {v}" for row in self.rows for v in row.violations]
        return per_entity + self.global_violations

    @property
    def ok(self) -> bool:
        return not self.violations

    def row(self, entity_id: str) -> EntityRow:
        return next(row for row in self.rows if row.entity_id == entity_id)

    def to_text(self) -> str:
        names = list(dict.fromkeys(name for r in self.rows for name in sorted(r.effects)))
        width = {name: max(len(name), 3) for name in names}
        header = f"{'id':<36} {'status':<10} " + " ".join(f"{n:>{width[n]}}" for n in names) + "  verdict"
        lines = [header, "-" * len(header)]
        lines.extend(
            f"{r.entity_id:<36} {r.status:<10} "
            + " ".join(f"{r.effects[n]:>{width[n]}}" for n in names)
            + f"  {r.verdict}"
            for r in self.rows
        )
        if self.dead_letters:
            lines.append("")
            lines.append("dead letters:")
            lines.extend(
                f"  {d.queue:<10} {d.message_id} id={d.entity_id or '-'} reason={d.reason or '(none)'}"
                for d in self.dead_letters
            )
        lines.append("")
        if self.ok:
            lines.append(f"OK: {len(self.rows)} entit(ies), every invariant holds")
        else:
            lines.append(f"{len(self.violations)} VIOLATION(S):")
            lines.extend(f"  - {v}" for v in self.violations)
        return "\n".join(lines)
