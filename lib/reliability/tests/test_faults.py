"""The hook points production code calls: the cold-start plan from the environment, and the
defaults crash_point and instrument fall back to."""

from __future__ import annotations

import sys

import pytest

from reliability import faults
from reliability.testing.crashpoints import CrashPlan

SEAM = "reliability.testing.crashplan"


@pytest.fixture
def unloaded_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """The crash plan's module as a cold start without the variable finds it: not loaded."""
    import reliability.testing as testing  # noqa: PLC0415 - the package whose attribute is restored

    monkeypatch.delitem(sys.modules, SEAM, raising=False)
    monkeypatch.delattr(testing, "crashplan", raising=False)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_cold_start_without_points_has_no_plan_and_loads_no_seam(
    monkeypatch: pytest.MonkeyPatch, unloaded_seam: None, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("RETRYSAFE_CRASH_POINTS", raising=False)
    else:
        monkeypatch.setenv("RETRYSAFE_CRASH_POINTS", value)
    assert faults._plan_from_env() is None
    assert SEAM not in sys.modules


def test_a_cold_start_with_points_parses_its_plan_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RETRYSAFE_CRASH_POINTS", " fence:after-effect:Pay@pay=2 ")
    monkeypatch.setenv("RETRYSAFE_CRASH_MODE", "raise")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "svc-dev-pay")
    monkeypatch.delenv("RETRYSAFE_CRASH_SCOPE", raising=False)
    monkeypatch.delenv("RETRYSAFE_CRASH_STATE_DIR", raising=False)
    plan = faults._plan_from_env()
    assert isinstance(plan, CrashPlan)
    assert (plan.points, plan.mode, plan.state_dir) == ({"fence:after-effect:Pay": 2}, "raise", None)
