"""The end of the demo: the invariant checker once the consumers caught up, a report per request
(step statuses from their fences, dedup hits, replays, the provider's calls and effects), and the
story of each written as a picture."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ops.demo.scenarios import Demo
from ops.invariants import Report, Stores, check
from ops.story import html as story_html

SETTLE_SECONDS = 60


def settle(demo: Demo) -> Report:
    """Wait until the consumers caught up (or give up and report what is there)."""
    demo.section("settling: consumers, then the invariant checker")
    stores = Stores.from_outputs(demo.out.outputs, demo.client)
    deadline = time.monotonic() + SETTLE_SECONDS
    report = check(stores)
    while not report.ok and time.monotonic() < deadline:
        time.sleep(1.0)
        report = check(stores)
    demo.say(f"invariant checker read {len(report.rows)} {demo.plan.service.entity.name}(s)")
    return report


def write_stories(demo: Demo, state_dir: Path) -> list[Path]:
    """Each request's story as `<state dir>/stories/<entity id>.{json,html}`; the HTML paths."""
    directory = state_dir / "stories"
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for placed in demo.requests:
        if not placed.entity_id:
            continue
        story = demo.story.collect(placed.entity_id)
        (directory / f"{placed.entity_id}.json").write_text(
            json.dumps(story.to_dict(), indent=1, default=str)
        )
        page = directory / f"{placed.entity_id}.html"
        page.write_text(story_html.render(story))
        written.append(page)
        demo.say(f"  {placed.label:<24} {page}")
    return written


def steps(demo: Demo, entity_id: str) -> str:
    """Each step's status on the entity's latest run (its fence), from its story."""
    statuses = demo.story.collect(entity_id).facts["step_statuses"]
    return ", ".join(f"{name} {status}" for name, status in statuses.items()) or "-"


def report(demo: Demo, checked: Report) -> str:
    rows = {row.entity_id: row for row in checked.rows}
    entity = demo.plan.service.entity.name
    lines = [
        "",
        "== report",
        f"{entity:<36} {'scenario':<24} {'status':<10} {'replays':>7} {'dedup':>5} "
        f"{'calls':>5} {'effects':>7}",
    ]
    details = []
    for placed in demo.requests:
        if not placed.entity_id:
            continue
        row = rows.get(placed.entity_id)
        view = demo.view(placed.entity_id).json
        calls, applied = (demo.provider_effects(view) if isinstance(view, dict) else None) or ("-", "-")
        lines.append(
            f"{placed.entity_id:<36} {placed.label:<24} {row.status if row else '?':<10} {placed.replays:>7} "
            f"{demo.dedup_hits(placed.entity_id):>5} {calls:>5} {applied:>7}"
        )
        details.append(f"  {placed.entity_id}: {steps(demo, placed.entity_id)}")
    lines += ["", f"steps per {entity} (their fences on the latest run; fence skips: the stories):", *details]
    lines.append(
        "dedup = duplicate messages/events the worker and consumers recognised; "
        "calls, effects = what the provider received and applied"
    )
    return "\n".join(lines)
