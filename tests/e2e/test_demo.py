"""End to end, local cloud only: the `make demo` scenario keeps every promise it prints."""

from __future__ import annotations

import io

import pytest

from localcloud import control
from ops.demo import play, verdict
from tests.e2e.conftest import E2ETarget

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_demo_scenario_ends_with_invariants_ok(e2e: E2ETarget, local_control: str):
    # Given the suite's local cloud (crash injection off), When the demo plays every scenario on it
    assert e2e.local is not None
    console = io.StringIO()
    problems = play(e2e.local, restore=True, console=console)
    control.prewarm(local_control)  # putting crash injection back retired the workers: warm them again

    # Then each scenario behaved as printed and the invariant checker agrees
    output = console.getvalue()
    assert verdict(problems) == "invariants: OK", output
    for promise in (
        "4 identical replays",
        "-> 422 IdempotencyKeyReused",
        "-> 400 IdempotencyKeyMissing",
        "ReserveInventory COMPENSATED",
        "dedup answered both copies (2 dedup hits)",
        "restart-with-same-token",
        "2 provider calls with the same key, 1 charge",
    ):
        assert promise in output, output
