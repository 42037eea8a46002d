"""Waiting for the service to get somewhere, as a client does: poll until an answer comes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_SECONDS = 0.3


def wait_for(what: str, probe: Callable[[], T | None], *, timeout: float, every: float = POLL_SECONDS) -> T:
    """Call `probe` until it returns something other than None; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
