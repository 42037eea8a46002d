"""Simulated time: one clock for the handlers, Powertools, Step Functions waits and AWS expiries."""

from __future__ import annotations

import datetime as dt
import threading
import time
import types
from collections.abc import Callable


class Clock:
    """Wall-clock time plus an offset the simulation moves forward (fence leases, TTLs, dates).

    `advance` only moves time; `InProcessCloud.advance` also applies what AWS does as time passes
    (TTL deletion, queue retention)."""

    def __init__(self) -> None:
        self.offset = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        with self._lock:  # Step Functions threads advance it concurrently (Retry waits)
            self.offset += seconds


def clocked_datetime_module(clock: Callable[[], float]) -> types.SimpleNamespace:
    """The `datetime` module, except that `datetime.now()` reads `clock` (for `mock.patch` of a
    library module's `dt` / `datetime` global)."""

    class ClockedDatetime(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
            return dt.datetime.fromtimestamp(clock(), tz)

    names = {k: v for k, v in vars(dt).items() if not k.startswith("__")}
    return types.SimpleNamespace(**{**names, "datetime": ClockedDatetime})
