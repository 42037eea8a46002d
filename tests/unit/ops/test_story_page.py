"""The story page as a person sees it: rendered by headless Chromium, checked on its pixels.

Needs Debian's `chromium` (`make browser` installs it). Without it this test skips and says so
loudly; CI machines get it from `make browser` (`.ci/run`; DEVELOPERS.md, "The test tiers").
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from ops.story import browser, html
from ops.story.model import Outcome, StepState, Story

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.skipif(
    browser.find() is None,
    reason="NO HEADLESS CHROMIUM: the story page's browser test did not run (`make browser` installs it)",
)


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Rows of RGB(A) bytes of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        chunk, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if chunk == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, interlace) == (8, 0)
            channels = {2: 3, 6: 4}[colour]
        elif chunk == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows = zlib.decompress(idat), width * channels, list[bytes]()
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, up_left = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def _hex(rgb: str) -> tuple[int, int, int]:
    return int(rgb[1:3], 16), int(rgb[3:5], 16), int(rgb[5:7], 16)


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> tuple[Story, html.Layout, int, list[bytes]]:
    story = Story.from_dict(json.loads((FIXTURES / "story_crash_redrive.json").read_text()))
    page = tmp_path_factory.mktemp("story") / "story.html"
    page.write_text(html.render(story))
    png = browser.screenshot(page, page.with_suffix(".png"), width=html.WIDTH, height=html.height(story))
    _, channels, rows = png_pixels(png)
    return story, html.layout(story), channels, rows


def _pixel(shown, x: int, y: int) -> tuple[int, int, int]:
    _, _, channels, rows = shown
    r, g, b = rows[y][x * channels : x * channels + 3]
    return r, g, b


def test_each_step_is_drawn_in_the_colour_of_what_happened_to_it(shown):
    _, lay, _, _ = shown
    expected = {
        "ReserveInventory": StepState.SKIPPED,  # ran in the first execution, skipped by its fence on redrive
        "ChargePayment": StepState.RETRIED,  # died, then taken over
        "RecordLedger": StepState.RAN,
        "MarkCompleted": StepState.RAN,
        "MarkFailed": StepState.NOT_RUN,
    }
    for step, state in expected.items():
        assert _pixel(shown, *lay.nodes[step].inner_point) == _hex(html.STATE_COLOUR[state]), step


def test_the_time_axis_shows_each_attempt_of_a_step_as_one_bar(shown):
    story, lay, _, _ = shown
    colours = {_hex(c) for c in html.OUTCOME_COLOUR.values()}

    def bars(step: str) -> list[tuple[int, int, int]]:
        y = int(lay.lane_y(step, next(e.lane for e in story.attempts(step))))
        seen: list[tuple[int, int, int]] = []
        previous: tuple[int, int, int] | None = None
        for x in range(html.AXIS_LEFT, html.AXIS_RIGHT + html.MIN_BAR):
            pixel = _pixel(shown, x, y)
            colour = pixel if pixel in colours else None
            if colour is not None and colour != previous:
                seen.append(colour)
            previous = colour
        return seen

    red, amber, green, blue = (
        _hex(html.OUTCOME_COLOUR[o]) for o in (Outcome.DIED, Outcome.TAKEOVER, Outcome.RAN, Outcome.SKIPPED)
    )
    assert bars("ChargePayment") == [red, amber]  # the dead attempt, then the takeover
    assert bars("ReserveInventory") == [green, blue]  # ran, then skipped by its fence
    assert bars("RecordLedger") == [green]
