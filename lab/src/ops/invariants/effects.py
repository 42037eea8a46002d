"""What the checker holds each run to, read from the declaration alone: the declared effects.

An effect is counted under the name of the entry that applies it (a step or a consumer), per
business entity and run:
- an item a step or consumer declares it writes (`Step.writes`, `Step.record`, `Consumer.writes`:
  `Item(table, prefix)`), found in the entity's partition (`Entity.partition(id)`) with a sort key
  starting with the prefix, its run told by the execution token or derived key it carries;
- the applied calls of a leased `provider` step, and any effect the service lays out its own way
  (an item outside the entity's partition, an item that counts its own repeats): counted by the
  service's proof hook (`violations(items, counts)`), which lists those entries in its `COUNTS`
  (`ops.service.hook_counts`); the generic count leaves them to it.

A provider's refusal of a step's call (a business error the step's Catch routes) is counted by
the hook too, under `refused(step)`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reliability.declaration import Item, Service, Step
from reliability.keys import key_parts
from reliability.record import FenceState

# Effects counted per entity id, then per run (`make rerun` starts run N+1 of a FAILED entity, and
# each run has its own effects); run 0 holds what no run can be told from (a provider call).
Counts = dict[str, dict[int, Counter[str]]]
UNATTRIBUTED = 0
Items = Callable[[str], list[dict[str, Any]]]


def new_counts() -> Counts:
    return defaultdict(lambda: defaultdict(Counter))


def refused(step: str) -> str:
    """The count of a provider's refusals of `step`'s call (at most one, on a run it failed)."""
    return f"{step} refused"


def run_of(item: Mapping[str, Any], prefix: str = "") -> int:
    """The run an effect item belongs to: the execution token or derived key it carries as its
    `token`, in its sort key after `prefix`, or in any other attribute (a provider's reference,
    an event's id); `UNATTRIBUTED` when none names a run."""
    sort_key = str(item.get("sk", ""))
    after = prefix and sort_key.startswith(prefix)
    tail = sort_key.removeprefix(prefix) if after else sort_key.partition("#")[2]
    others = (item[k] for k in sorted(item) if k not in ("pk", "sk", "token"))
    for value in (item.get("token"), tail, *others):
        if (run := run_in(value)) != UNATTRIBUTED:
            return run
    return UNATTRIBUTED


def run_in(value: Any) -> int:
    """The run an execution token or derived key names; `UNATTRIBUTED` for anything else."""
    parts = key_parts(value) if isinstance(value, str) and value else None
    return UNATTRIBUTED if parts is None else parts.run


@dataclass(frozen=True)
class Effects:
    """The declared effects of a service, and the roles its steps play in a run.

    `counted`: the entries whose effect is counted (generically or by the hook), steps first, in
    declaration order; `by_hook`: those the hook counts itself."""

    declared: Service
    by_hook: frozenset[str] = frozenset()

    @classmethod
    def of(cls, declared: Service, by_hook: Collection[str] = ()) -> Effects:
        return cls(declared, frozenset(by_hook))

    def items(self) -> list[tuple[str, Item]]:
        """(entry name, item) of every declared item the generic count reads."""
        found: list[tuple[str, Item]] = []
        entries: list[tuple[str, tuple[Item, ...]]] = [
            (s.name, (*s.writes, *((s.record,) if s.record is not None else ()))) for s in self.declared.steps
        ]
        entries += [(c.name, c.writes) for c in self.declared.consumers]
        for name, items in entries:
            if name not in self.by_hook:
                found.extend((name, item) for item in dict.fromkeys(items))
        return found

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps whose effect is counted: those writing declared items, and the provider steps
        the hook counts."""
        return tuple(s for s in self.declared.steps if s.writes or s.record or s.name in self.by_hook)

    @property
    def consumers(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.declared.consumers if c.writes or c.name in self.by_hook)

    @property
    def providers(self) -> tuple[str, ...]:
        """The counted steps that call a provider (a refusal of theirs is counted)."""
        return tuple(s.name for s in self.steps if s.provider is not None)

    @property
    def path(self) -> tuple[str, ...]:
        """The steps a completed run took (the declaration's happy path)."""
        return self.declared.happy_path()

    @property
    def completed(self) -> str | None:
        """The status the happy path's last status-setting step gives the entity."""
        statuses = [self.declared.step(s).status for s in self.path]
        return next((s for s in reversed(statuses) if s is not None), None)

    @property
    def failed(self) -> tuple[str, ...]:
        """Every other status a step sets: the ends of the compensation paths."""
        statuses = (s.status for s in self.declared.steps)
        return tuple(dict.fromkeys(s for s in statuses if s is not None and s != self.completed))

    @property
    def compensations(self) -> frozenset[str]:
        return frozenset(s.name for s in self.declared.steps if s.compensates)

    def compensator(self, step: str) -> str | None:
        found = self.declared.compensator_of(step)
        return None if found is None else found.name

    def entity_id(self, partition: str) -> str | None:
        """The entity id of a partition key (`Entity.partition`), None for any other key."""
        head = f"{self.declared.entity.name}#"
        return partition.removeprefix(head) if partition.startswith(head) else None


def tally_declared(items: Items, effects: Effects, counts: Counts) -> None:
    """Count every declared item in its entity's partition, per entity and run."""
    for name, item in effects.items():
        tally_items(items(item.table), item.prefix, name, counts, effects.entity_id)


def tally_items(
    rows: Iterable[Mapping[str, Any]],
    prefix: str,
    name: str,
    counts: Counts,
    entity_of: Callable[[str], str | None],
) -> None:
    """Count the rows under `prefix` of each entity (`entity_of` its partition key) as `name`. A
    row that carries step `name`'s FAILED record is no effect: a failed step's record is an item of
    its own at the key its effect would have written (`reliability.effects.RecordOn`)."""
    for row in rows:
        entity_id = entity_of(str(row.get("pk", "")))
        failed_record = row.get("step") == name and row.get("state") == FenceState.FAILED
        if entity_id is not None and str(row.get("sk", "")).startswith(prefix) and not failed_record:
            counts[entity_id][run_of(row, prefix)][name] += 1
