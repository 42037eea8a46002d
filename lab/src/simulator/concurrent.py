"""Copies of one piece of work run at once, their steps interleaved in an order drawn from a seed.

AWS runs two executions of one run concurrently in several ways: Express does not dedupe names
(a message delivered twice to two workers at once is two executions of the same name), a
restart or an operator's copy of a run's message meets the first copy still running, a worker
whose Lambda timed out leaves its sync execution running while the message comes back. Their
steps interleave at every storage call, and that is where a fence must hold.

`Interleaver(choose).run(bodies)` runs each body on a thread of its own, one at a time: a
participant runs until its next *switch point* (every DynamoDB or SQS request it makes,
`simulator.lambdas`), parks there, and `choose(enabled)` picks which participant goes on. The
threads a participant starts belong to it (moto runs each execution's program and each task
state on threads of their own): a thread started by a tagged thread inherits its tag. Only one
participant runs at a time and `choose` alone decides the order, so a seeded `choose` gives one
outcome per seed (`seeded`).

A participant that blocks on something another holds while parked would stall the run: the
scheduler gives up after `PARK_TIMEOUT_SECONDS` with `InterleavingStalled` (a harness error,
never a verdict).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

PARK_TIMEOUT_SECONDS = 60
Choose = Callable[[list[int]], int]


class InterleavingStalled(RuntimeError):
    """A participant neither reached a switch point nor finished in time."""


class _Tags(threading.local):
    tag: int | None = None


_tags = _Tags()
_active: Interleaver | None = None
_active_lock = threading.Lock()


def switch_point() -> None:
    """Where a participant may be parked and another resumed (a no-op outside `Interleaver.run`
    and on threads that belong to no participant)."""
    interleaver = _active
    if interleaver is not None and _tags.tag is not None:
        interleaver._park(_tags.tag)


def seeded(seed: int) -> Choose:
    """A chooser drawing each pick from `random.Random(seed)`: one interleaving per seed."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible schedule, not a secret
    return rng.choice


@dataclass
class Outcome:
    result: Any = None
    error: BaseException | None = None


@contextmanager
def _inherited_tags() -> Iterator[None]:
    """A thread started by a participant's thread belongs to that participant."""
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        tag = _tags.tag
        target = getattr(self, "_target", None)
        if tag is not None and target is not None:

            def tagged(*args: Any, **kwargs: Any) -> Any:
                _tags.tag = tag
                return target(*args, **kwargs)

            self._target = tagged  # type: ignore[attr-defined]
        original(self)

    with mock.patch.object(threading.Thread, "start", start):
        yield


class Interleaver:
    """Runs participants one at a time, switching at their switch points as `choose` says."""

    def __init__(self, choose: Choose) -> None:
        self._choose = choose
        self._cond = threading.Condition()
        self._turn: int | None = None
        self._done: set[int] = set()
        self.switches = 0  # how many times the running participant changed

    def _park(self, tag: int) -> None:
        with self._cond:
            self._turn = None
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._turn == tag, timeout=PARK_TIMEOUT_SECONDS):
                raise InterleavingStalled(f"participant {tag} was never resumed")

    def _resume(self, tag: int) -> None:
        with self._cond:
            self._turn = tag
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._turn is None, timeout=PARK_TIMEOUT_SECONDS):
                raise InterleavingStalled(f"participant {tag} neither parked nor finished")

    def finished(self, tags: Sequence[int]) -> bool:
        """Whether every participant of `tags` has ended (for one that waits on the others)."""
        with self._cond:
            return set(tags) <= self._done

    def run(self, bodies: Sequence[Callable[[], Any]]) -> list[Outcome]:
        """Run every body to its end, interleaved; their results or errors, in order."""
        global _active  # noqa: PLW0603 - one interleaving at a time, process-wide like moto's backends
        outcomes = [Outcome() for _ in bodies]

        def body(tag: int) -> None:
            _tags.tag = tag
            with self._cond:
                self._cond.wait_for(lambda: self._turn == tag)
            try:
                outcomes[tag].result = bodies[tag]()
            except BaseException as error:  # noqa: BLE001 - the outcome is judged, not raised
                outcomes[tag].error = error
            finally:
                with self._cond:
                    self._done.add(tag)
                    self._turn = None
                    self._cond.notify_all()

        with _active_lock:
            if _active is not None:
                raise RuntimeError("an interleaving is already running")
            _active = self
        threads = [
            threading.Thread(target=body, args=(i,), daemon=True, name=f"copy-{i}")
            for i in range(len(bodies))
        ]
        try:
            with _inherited_tags():
                for thread in threads:
                    thread.start()
                last: int | None = None
                while len(self._done) < len(bodies):
                    enabled = [i for i in range(len(bodies)) if i not in self._done]
                    pick = self._choose(enabled) if len(enabled) > 1 else enabled[0]
                    if last is not None and pick != last:
                        self.switches += 1
                    last = pick
                    self._resume(pick)
        finally:
            with _active_lock:
                _active = None
            for thread in threads:
                thread.join(timeout=PARK_TIMEOUT_SECONDS)
        return outcomes
