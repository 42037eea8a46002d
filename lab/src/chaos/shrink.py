"""A violating schedule made small: drop one part at a time while it still violates.

Greedy and deterministic (the simulator gives one verdict per schedule): each pass tries the
schedule without one action, one fault or its last entity, and keeps the first that still
violates, until no single part can go or the budget of runs is spent. What is left is the
reproducer a person reads, so every part of it is one the violation needs (as far as one part at
a time can tell).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from chaos.schedules import Schedule

SHRINK_BUDGET = 20  # runs a shrink may spend


def shrink(
    schedule: Schedule, violates: Callable[[Schedule], bool], *, budget: int = SHRINK_BUDGET
) -> Schedule:
    """The smallest schedule found that still `violates` (at most `budget` runs)."""
    current = schedule
    while budget > 0:
        for smaller in smaller_ones(current):
            if budget <= 0:
                break
            budget -= 1
            if violates(smaller):
                current = smaller
                break
        else:
            break  # no single part can go
    return current


def smaller_ones(schedule: Schedule) -> Iterator[Schedule]:
    """The schedule without one part: each fault, each action (the last first), its last entity."""
    for name in ("stops", "timeouts", "lost", "errors", "crashes", "gives_up"):
        parts = getattr(schedule, name)
        for index in range(len(parts)):
            yield replace(schedule, **{name: parts[:index] + parts[index + 1 :]})
    actions = schedule.actions
    for index in reversed(range(len(actions))):
        yield replace(schedule, actions=actions[:index] + actions[index + 1 :])
    if len(schedule.outcomes) > 1:
        last = len(schedule.outcomes) - 1
        yield replace(
            schedule,
            outcomes=schedule.outcomes[:last],
            gives_up=tuple(i for i in schedule.gives_up if i < last),
            actions=tuple(a for a in actions if a.entity < last),
        )
