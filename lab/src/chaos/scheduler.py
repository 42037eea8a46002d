"""Two attempts of the same work, one storage call at a time, in the order a chooser says.

Each attempt runs on its own thread. The `CrashController` listener parks an attempt at every
`before:` point (before each AWS call), so exactly one attempt runs at a time and only between two
calls. At every point where both are parked, a chooser decides which one proceeds (`Scheduler`);
`dfs` enumerates every sequence of those choices, replaying the choice prefix, then taking the
first untried branch. A zombie's clock runs a lease ahead of the other attempt's (`SkewClock`).

What the attempts are and how they are judged is `chaos.interleave`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos.points import CrashController
from simulator.cloud import Clock

PARK_TIMEOUT_SECONDS = 60


class SkewClock(Clock):
    """The harness clock plus a per-thread skew (a zombie's view of time is one lease behind)."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def __call__(self) -> float:
        return super().__call__() + getattr(self._local, "skew", 0.0)

    def skew_this_thread(self, seconds: float) -> None:
        self._local.skew = seconds


class Chooser:
    """Replays a prefix of choices, then always takes the first enabled attempt; keeps the trace."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.trace: list[tuple[list[int], int]] = []

    def __call__(self, enabled: list[int]) -> int:
        k = len(self.trace)
        pick = self.prefix[k] if k < len(self.prefix) and self.prefix[k] in enabled else enabled[0]
        self.trace.append((list(enabled), pick))
        return pick


def next_prefix(trace: list[tuple[list[int], int]]) -> list[int] | None:
    """The depth-first successor of a trace: the deepest choice with an untried branch."""
    for i in range(len(trace) - 1, -1, -1):
        enabled, chosen = trace[i]
        position = enabled.index(chosen)
        if position + 1 < len(enabled):
            return [c for _, c in trace[:i]] + [enabled[position + 1]]
    return None


@dataclass
class Attempt:
    run: Callable[[], Any]
    skew: float = 0.0
    result: Any = None
    error: BaseException | None = None
    calls: int = 0


class Scheduler:
    """Runs attempts one storage call at a time, in the order the chooser says."""

    def __init__(self, controller: CrashController, clock: SkewClock) -> None:
        self._controller = controller
        self._clock = clock
        self._cond = threading.Condition()
        self._turn: int | None = None
        self._done: set[int] = set()
        self.finished: list[int] = []
        self._local = threading.local()

    def _listener(self, _function: str, point: str) -> None:
        index = getattr(self._local, "index", None)
        if index is None or not point.startswith("before:"):
            return
        self._park(index)

    def _park(self, index: int) -> None:
        with self._cond:
            self._turn = None
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._turn == index, timeout=PARK_TIMEOUT_SECONDS):
                raise TimeoutError(f"attempt {index} was never resumed")

    def _resume(self, index: int) -> None:
        with self._cond:
            self._turn = index
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._turn is None, timeout=PARK_TIMEOUT_SECONDS):
                raise TimeoutError(f"attempt {index} neither parked nor finished")

    def run(self, attempts: list[Attempt], choose: Callable[[list[int]], int]) -> None:
        def body(index: int, attempt: Attempt) -> None:
            self._local.index = index
            self._clock.skew_this_thread(attempt.skew)
            with self._cond:
                self._cond.wait_for(lambda: self._turn == index)
            try:
                attempt.result = attempt.run()
            except BaseException as error:  # noqa: BLE001 - the outcome is judged, not raised
                attempt.error = error
            finally:
                with self._cond:
                    self._done.add(index)
                    self.finished.append(index)
                    self._turn = None
                    self._cond.notify_all()

        self._controller.listener = self._listener
        threads = [
            threading.Thread(target=body, args=(i, a), daemon=True, name=f"attempt-{i}")
            for i, a in enumerate(attempts)
        ]
        try:
            for thread in threads:
                thread.start()
            for index in range(len(attempts)):  # each to its first call: no storage touched yet
                self._resume(index)
            while len(self._done) < len(attempts):
                enabled = [i for i in range(len(attempts)) if i not in self._done]
                pick = choose(enabled) if len(enabled) > 1 else enabled[0]
                attempts[pick].calls += 1
                self._resume(pick)
        finally:
            self._controller.listener = None
            for thread in threads:
                thread.join(timeout=PARK_TIMEOUT_SECONDS)


def dfs(run_one: Callable[[Chooser], None], *, limit: int | None = None) -> int:
    """Depth-first over every sequence of choices `run_one` meets; returns how many it ran."""
    prefix: list[int] | None = []
    count = 0
    while prefix is not None and (limit is None or count < limit):
        chooser = Chooser(prefix)
        run_one(chooser)
        count += 1
        prefix = next_prefix(chooser.trace)
    return count
