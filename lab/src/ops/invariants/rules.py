"""The generic invariants, over the effects counted per entity and run (`ops.invariants.effects`),
each rule as a list of violations. They read the declaration, never a domain's names:

- each declared effect applied at most once per (entity, run);
- a completed run has exactly one effect of each counted step on its path, none of a step off it
  (a compensation), and one of each consumer unless that consumer's DLQ holds its event;
- a failed run's effects are each undone by the step declared to compensate them (as many undone
  as done), and an effect no step compensates is not there at all, nor any consumer's;
- an unfinished run is excused only by a dead letter with a reason, and only with nothing left
  standing;
- steps agree with effects: a counted step is done exactly when its effect is there, a step that
  sets a status (`Step.status`) exactly when the entity has it, and a provider's refusal of a
  step's call (at most one) only on a failed run whose step failed.

The service's own rules over whole tables (the sample's amounts, stock, day counters) are its
hook's (`ops.service.domain_invariants`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ops.invariants.effects import UNATTRIBUTED, Effects, refused
from ops.invariants.report import EntityRow
from ops.invariants.stores import DeadLetter
from ops.service import step_statuses
from reliability.declaration import StepStatus


@dataclass(frozen=True)
class Exemptions:
    """What an entity may not be held to, decided once per entity (`ops.invariants.check`) and
    honoured by every rule through these two questions, never re-derived by a rule of its own.

    `unfinished_allowed`: the entity may be neither finished nor excused by a dead letter (the
    check runs while work moves, or the entity is left to an operator past the windows in which a
    redrive or a restart is safe: what it left standing is a person's to settle).
    `fences_may_be_gone`: the entity is older than the windows its fences must outlive, so
    DynamoDB TTL may have deleted them and an absent fence is no evidence of anything."""

    unfinished_allowed: bool = False
    fences_may_be_gone: bool = False

    def absent_fence_excused(self, step: str, steps: Mapping[str, object]) -> bool:
        return self.fences_may_be_gone and step not in steps


NONE = Exemptions()
_DONE = frozenset({StepStatus.DONE, StepStatus.COMPENSATED})


def check_run(
    effects: Effects,
    entity_id: str,
    status: str,
    c: Counter[str],
    *,
    dead: Sequence[DeadLetter] = (),
    exempt: Exemptions = NONE,
    run: int = 1,
) -> EntityRow:
    """One run of an entity, judged by the status it ended with."""
    row = EntityRow(
        entity_id=entity_id,
        status=status,
        run=run,
        effects=+c,
        dead_letters=[f"{d.queue}: {d.reason or '(no reason)'}" for d in dead],
    )
    v = row.violations
    steps = [s.name for s in effects.steps]
    v.extend(f"{c[name]} {name} effects (at most 1)" for name in (*steps, *effects.consumers) if c[name] > 1)
    for name in steps:
        undo = effects.compensator(name)
        if undo in steps and c[undo] > c[name]:
            v.append(f"{undo} undid {c[undo]} {name} effect(s) of {c[name]}")
    queues = {d.queue for d in dead if d.reason}
    if status == effects.completed:
        row.outcome = "completed"
        v.extend(_completed(effects, status, c, queues))
    elif status in effects.failed:
        row.outcome = "compensated" if any(c[name] for name in effects.compensations) else "failed"
        v.extend(_failed(effects, status, c))
    elif not queues and not exempt.unfinished_allowed:
        v.append(f"{status}: neither completed, compensated, nor in a DLQ with a reason")
    return row


def _completed(effects: Effects, status: str, c: Counter[str], dead_lettered: set[str]) -> list[str]:
    """A completed run: one effect of each step on its path, none off it, one of each consumer's
    (unless its event is in that consumer's DLQ with a reason)."""
    v = []
    for name in (s.name for s in effects.steps):
        on_path = name in effects.path
        if on_path and c[name] != 1:
            v.append(f"{c[name]} {name} effect(s), expected 1")
        elif not on_path and c[name]:
            v.append(f"{status} but has {c[name]} {name} effect(s), a step off its path")
    v.extend(
        f"{c[name]} {name} effect(s), expected 1 (or the event dead-lettered)"
        for name in effects.consumers
        if c[name] != 1 and name not in dead_lettered
    )
    return v


def _failed(effects: Effects, status: str, c: Counter[str]) -> list[str]:
    """A failed run: every applied effect undone by its declared compensation; none that no step
    compensates, nor any consumer's."""
    v = []
    counted = {s.name for s in effects.steps}
    for name in (s.name for s in effects.steps):
        undo = effects.compensator(name)
        if name in effects.compensations or not c[name]:
            continue
        if undo is None or undo not in counted:
            v.append(f"{status} but has {c[name]} {name} effect(s), which no step compensates")
        elif c[undo] < c[name]:
            v.append(f"{status} but its {name} effect was not undone by {undo}")
    v.extend(f"{status} but has {c[name]} {name} effect(s)" for name in effects.consumers if c[name])
    return v


def left_standing(row: EntityRow, effects: Effects) -> list[str]:
    """What an unfinished entity did that nothing undid."""
    c = row.effects
    left = [
        f"{name}'s effect"
        for name in (s.name for s in effects.steps)
        if name not in effects.compensations and c[name] - c[effects.compensator(name) or ""] > 0
    ]
    return left + [f"{name}'s effect" for name in effects.consumers if c[name] > 0]


def check_steps(
    row: EntityRow, fences: Mapping[str, str], effects: Effects, exempt: Exemptions = NONE
) -> list[str]:
    """A finished run's steps (their records) and effects tell one story; an absent fence the
    exemptions excuse (`Exemptions.fences_may_be_gone`) is no evidence either way."""
    steps = step_statuses(effects.declared, fences)
    v = []
    agreements: list[tuple[str, str, bool]] = [
        (s.name, f"its {s.name} effect", row.effects[s.name] > 0) for s in effects.steps
    ]
    agreements += [
        (s.name, f"status {s.status}", row.status == s.status) for s in effects.declared.steps if s.status
    ]
    for step, effect, happened in agreements:
        done = steps.get(step) in _DONE
        if done and not happened:
            v.append(f"step {step} recorded {steps[step]} without {effect}")
        if happened and not done and not exempt.absent_fence_excused(step, steps):
            v.append(f"{effect} without step {step} recorded done (it is {steps.get(step, 'absent')})")
    for step in effects.providers:
        count = row.effects[refused(step)]
        if count > 1:
            v.append(f"{count} refusals of {step}'s call (at most 1)")
        state = steps.get(step)
        step_failed = state == StepStatus.FAILED or exempt.absent_fence_excused(step, steps)
        if count and (row.status not in effects.failed or not step_failed):
            v.append(f"a refusal of {step}'s call on a {row.status} run whose {step} is {state}")
    return v


def check_runs(
    effects: Effects,
    entity: Mapping[str, Any],
    runs: Mapping[int, Counter[str]],
    fences_of_run: Callable[[int], Mapping[str, str]],
    *,
    dead: Sequence[DeadLetter] = (),
    exempt: Exemptions = NONE,
) -> EntityRow:
    """One entity, run by run. Its current run is judged by the entity's status (`check_run`, and
    `check_steps` once finished; a dead-lettered one only with nothing left standing). Each
    earlier run ended failed, since `make rerun` starts run N+1 only then: it must be a
    compensated failed run with its steps agreeing. No effect may belong to a run the entity never
    reached. `exempt` holds for every run and every rule."""
    entity_id = effects.entity_id(str(entity["pk"])) or str(entity["pk"])
    status, current = str(entity.get("status")), int(entity.get("run", 1))
    counted = runs.get(current, Counter()) + runs.get(UNATTRIBUTED, Counter())
    row = check_run(effects, entity_id, status, counted, dead=dead, exempt=exempt, run=current)
    if row.outcome != "unfinished":
        row.violations.extend(check_steps(row, fences_of_run(current), effects, exempt))
    elif dead and not exempt.unfinished_allowed and (standing := left_standing(row, effects)):
        row.violations.append(
            f"{status}, in a DLQ, but {', '.join(standing)} still standing (not compensated)"
        )
    failed = effects.failed[0] if effects.failed else "FAILED"
    for run in range(1, current):
        earlier = check_run(effects, entity_id, failed, runs.get(run, Counter()), exempt=exempt, run=run)
        earlier.violations.extend(check_steps(earlier, fences_of_run(run), effects, exempt))
        row.violations.extend(f"run {run} (before the rerun): {v}" for v in earlier.violations)
    row.violations.extend(
        f"effects of run {run}, which it never reached (it is on run {current}): {dict(counted)}"
        for run, counted in sorted(runs.items())
        if run > current and +counted
    )
    return row
