"""The hook points where a test may inject a fault; nothing happens unless a plan is armed.

Production code calls ``crash_point(name, plan)`` at a named point and ``instrument(client, plan)``
on each AWS client it builds. A plan (``FaultPlan``) comes from a test, which passes one in, or
from ``RETRYSAFE_CRASH_POINTS`` in the process's environment (chaos runs, the local cloud's
workers), parsed once at cold start by ``reliability.testing.crashplan``: that test seam is
imported only when the variable is set, so a deployed function checks one variable and loads
nothing else.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

ENV_POINTS = "RETRYSAFE_CRASH_POINTS"


class FaultPlan(Protocol):
    """What the hook points need of a plan (reliability.testing.crashplan.CrashPlan is one)."""

    def hit(self, point: str) -> None:
        """Fail here if ``point`` is armed."""

    def instrument(self, client: Any) -> Any:
        """``client`` with the armed AWS failures hooked in."""

    def for_function(self, function_name: str | None) -> FaultPlan:
        """This plan as the named function sees it (entries scoped to others left out)."""


def _plan_from_env() -> FaultPlan | None:
    if not os.environ.get(ENV_POINTS, "").strip():
        return None
    from reliability.testing.crashplan import CrashPlan  # noqa: PLC0415 - a test seam, loaded only when armed

    return CrashPlan.from_env(os.environ)


_PLAN: FaultPlan | None = _plan_from_env()


def active_plan() -> FaultPlan | None:
    """The plan parsed from the environment at cold start (None when off)."""
    return _PLAN


def crash_point(name: str, plan: FaultPlan | None = None) -> None:
    """A named point; ``plan`` defaults to the cold-start plan. A ``None`` check when off."""
    active = plan if plan is not None else _PLAN
    if active is not None:
        active.hit(name)


def instrument(client: Any, plan: FaultPlan | None = None) -> Any:
    """``client`` instrumented by ``plan`` (default: the cold-start plan); unchanged when off."""
    active = plan if plan is not None else _PLAN
    return client if active is None else active.instrument(client)
