"""Fences judged from outside: every write to a fence record, seen as it happened.

A fence record (an item with `state` and `fencing_token`, on the fence table or, for consumer
dedup, the idempotency table) may only move as `reliability.record` promises (`TRANSITIONS`):
- an attempt *claims* it (IN_PROGRESS with a new owner or a new fencing token): from then on that
  invocation, and only it, holds the fence; a claim never takes a fence whose holder's lease is
  still live (by the claimant's clock);
- only the current holder moves it to COMPLETED or FAILED (a record created terminal in one
  transaction, `run_atomic`, has no holder and needs none);
- a COMPLETED or FAILED record never changes again (its state, token and result), except that
  TTL may delete it.

A zombie whose completion lands after a takeover, a claim that re-opens a completed step, a
counter that does not advance: each is a violation here even when both attempts returned equal
results and every store looks right (the provider deduplicated the repeated call). The audit
sees the writes through `simulator.observe` (before and after each request, inside the
simulator's request lock), never through the code under test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.observe import Caller, ItemChange, Write

TERMINAL = frozenset({"COMPLETED", "FAILED"})


def _value(item: dict[str, Any] | None, name: str) -> str | None:
    if item is None or name not in item:
        return None
    return str(next(iter(item[name].values())))


def _name(caller: Caller | None) -> str:
    return f"{caller.function} ({caller.invocation[:8]})" if caller else "the simulator"


def is_fence(item: dict[str, Any] | None) -> bool:
    return item is not None and "state" in item and "fencing_token" in item


@dataclass
class FenceAudit:
    clock: Callable[[], float]
    violations: list[str] = field(default_factory=list)
    claims: int = 0
    completions: int = 0
    _holders: dict[str, tuple[Caller | None, str | None]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, write: Write) -> None:
        if not write.ok:
            return
        with self._lock:
            for change in write.changes:
                if is_fence(change.before) or is_fence(change.after):
                    self._judge(write, change)

    def _judge(self, write: Write, change: ItemChange) -> None:
        before, after, who = change.before, change.after, write.caller
        where = f"fence {change.key}"
        by = _name(who)
        state_before, state_after = _value(before, "state"), _value(after, "state")
        if after is None:
            if who is not None and state_before in TERMINAL:
                self.violations.append(f"{where}: {state_before} record deleted by {by}")
            return
        token = _value(after, "fencing_token")
        if state_before in TERMINAL:
            kept = all(_value(before, a) == _value(after, a) for a in ("state", "fencing_token", "result"))
            if not kept:
                self.violations.append(
                    f"{where}: {state_before} record rewritten by {by} (now {state_after}, token {token})"
                )
            return
        if state_after == "IN_PROGRESS":
            # A release (the holder clears owner and lease) is not a claim.
            moved = any(_value(before, a) != _value(after, a) for a in ("owner", "fencing_token"))
            claimed = moved and _value(after, "owner") is not None
            if before is None or claimed:
                self._holders[change.key] = (who, token)
                self.claims += 1
                lease = _value(before, "lease_expires")
                now = self.clock()
                if state_before == "IN_PROGRESS" and lease is not None and float(lease) > now:
                    left = float(lease) - now
                    self.violations.append(f"{where}: claimed by {by}, the holder's lease live {left:.0f} s")
            return
        if state_after in TERMINAL:
            self.completions += 1
            if before is None:
                return  # created terminal in one transaction (run_atomic, a recorded refusal)
            holder = self._holders.get(change.key)
            if holder != (who, token):
                held = _name(holder[0]) if holder else "nobody"
                self.violations.append(
                    f"{where}: {by} moved it to {state_after} at token {token} while {held} held it "
                    f"(token {holder[1] if holder else '-'}): a stale attempt's completion landed"
                )
