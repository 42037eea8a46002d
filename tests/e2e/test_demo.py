"""End to end, local cloud only: the `make demo` scenario keeps every promise it prints."""

from __future__ import annotations

import io
import json
import re

import pytest

from localcloud import control
from ops.demo import play, verdict
from ops.story import browser, html
from ops.story.model import Outcome, StepState, Story
from tests.e2e.conftest import E2ETarget
from tests.unit.ops.test_story_page import png_pixels

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_demo_scenario_ends_with_invariants_ok(e2e: E2ETarget, local_control: str):
    # Given the suite's local cloud (crash injection off), When the demo plays every scenario on it
    assert e2e.local is not None
    assert e2e.state_dir is not None
    console = io.StringIO()
    problems = play(e2e.local, restore=True, console=console, state_dir=e2e.state_dir)
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
        "the takeover found the effect at the provider: 1 provider call, 1 effect",
    ):
        assert promise in output, output

    # And the demo wrote the story of each of its four orders (one per outcome, and the crash), and
    # said where
    pages = re.findall(r"(\S+/stories/(o-[0-9a-f]{32})\.html)", output)
    assert len(pages) == 4, output
    crash_id = next(
        order
        for line in output.splitlines()
        if "crash + redrive" in line
        for _, order in re.findall(r"(\S+/stories/(o-[0-9a-f]{32})\.html)", line)
    )
    crash = Story.from_dict(json.loads((e2e.state_dir / "stories" / f"{crash_id}.json").read_text()))
    # The crash-and-redrive order's story: the dead attempt, the redrive, ReserveInventory skipped
    # by its fence, ChargePayment's takeover and the single charge
    # (on a loaded machine the redrive can meet the dead attempt's lease still live: those attempts
    # are FenceBusy retries, BUSY, between the death and the takeover)
    charge_attempts = [e.outcome for e in crash.attempts("ChargePayment")]
    assert charge_attempts[0] is Outcome.DIED, charge_attempts
    assert charge_attempts[-1] is Outcome.TAKEOVER, charge_attempts
    assert set(charge_attempts[1:-1]) <= {Outcome.BUSY}, charge_attempts
    assert any(e.outcome is Outcome.REDRIVEN for e in crash.entries)
    assert [e.outcome for e in crash.attempts("ReserveInventory")] == [Outcome.RAN, Outcome.SKIPPED]
    assert [c["status"] for c in crash.facts["charges"]] == ["SUCCEEDED"]
    assert crash.verdict == "completed"
    # And its picture, as headless Chromium shows it, colours the two steps by what happened
    if browser.find() is None:
        pytest.skip("NO HEADLESS CHROMIUM: the demo's story page was not rendered (`make browser`)")
    page = e2e.state_dir / "stories" / f"{crash_id}.html"
    png = browser.screenshot(page, page.with_suffix(".png"), width=html.WIDTH, height=html.height(crash))
    _, channels, rows = png_pixels(png)
    lay = html.layout(crash)
    for step, state in (("ChargePayment", StepState.RETRIED), ("ReserveInventory", StepState.SKIPPED)):
        x, y = lay.nodes[step].inner_point
        colour = "#" + rows[y][x * channels : x * channels + 3].hex()
        assert colour == html.STATE_COLOUR[state], step
