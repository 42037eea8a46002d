"""The story as a picture: one self-contained HTML page holding one SVG (no scripts, no fetches).

Top: the workflow graph from the state machine definition, each step filled by what happened to
it over all attempts (`StepState`), with its invocation count. Below: every attempt on a time
axis, one row per step (and per request/delivery lane), coloured by its outcome. Coordinates are
fixed (`Layout`), so a test can look at the rendered pixels where a step is drawn.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from html import escape

from ops.service import service
from ops.story.model import Entry, Lane, Outcome, StepState, Story
from ops.story.text import clock

WIDTH = 1400
NODE_W, NODE_H, COL_W, ROW_H = 172, 60, 192, 110
GRAPH_TOP, GRAPH_LEFT = 110, 24
AXIS_LEFT, AXIS_RIGHT, LANE_H, BAR_H, MIN_BAR = 230, 1370, 30, 16, 10

STATE_COLOUR: dict[StepState, str] = {
    StepState.RAN: "#2e9e5b",
    StepState.SKIPPED: "#3b82c4",
    StepState.RETRIED: "#e0a526",
    StepState.COMPENSATED: "#8e5bd6",
    StepState.FAILED: "#d64545",
    StepState.NOT_RUN: "#d0d4d9",
}
_GREEN, _BLUE, _AMBER, _RED, _PURPLE, _ORANGE, _GREY = (
    "#2e9e5b",
    "#3b82c4",
    "#e0a526",
    "#d64545",
    "#8e5bd6",
    "#f07b28",
    "#7a828c",
)
OUTCOME_COLOUR: dict[Outcome, str] = {
    Outcome.EXECUTED: _GREEN,
    Outcome.STARTED: _GREEN,
    Outcome.RAN: _GREEN,
    Outcome.APPLIED: _GREEN,
    Outcome.REPLAYED: _BLUE,
    Outcome.DEDUP_HIT: _BLUE,
    Outcome.SKIPPED: _BLUE,
    Outcome.DEDUPLICATED: _BLUE,
    Outcome.TAKEOVER: _AMBER,
    Outcome.BUSY: _AMBER,
    Outcome.RETRY: _AMBER,
    Outcome.REDRIVEN: _AMBER,
    Outcome.DIED: _RED,
    Outcome.STALE: _RED,
    Outcome.FAILED: _RED,
    Outcome.POISON: _RED,
    Outcome.EXECUTION_FAILED: _RED,
    Outcome.ABORTED: _RED,
    Outcome.TIMED_OUT: _RED,
    Outcome.COMPENSATED: _PURPLE,
    Outcome.CONFLICT: _ORANGE,
    Outcome.MISMATCH: _ORANGE,
    Outcome.EXECUTION_STARTED: _GREY,
    Outcome.SUCCEEDED: _GREEN,
    Outcome.RUNNING: _GREY,
}


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def inner_point(self) -> tuple[int, int]:
        """A pixel inside the box and clear of its text: where its fill shows."""
        return int(self.x + 6), int(self.y + 6)


@dataclass(frozen=True)
class Layout:
    nodes: dict[str, Box]
    lanes: list[tuple[str, Lane, float]]  # (subject, lane, centre y) of each time-axis row
    axis_top: float
    height: float
    t0: float
    t1: float

    def x_of(self, at: float) -> float:
        span = max(self.t1 - self.t0, 1e-3)
        return AXIS_LEFT + (at - self.t0) / span * (AXIS_RIGHT - AXIS_LEFT - MIN_BAR)

    def lane_y(self, subject: str, lane: Lane) -> float:
        return next(y for s, ln, y in self.lanes if s == subject and ln is lane)


def _columns(story: Story) -> tuple[dict[str, int], dict[str, int]]:
    """Column: longest path from the start; row 0: the chain of `Next` from StartAt, row 1: the rest."""
    column = {step: 0 for step in story.steps}
    for _ in story.steps:  # relax along the edges (a DAG: at most len(steps) rounds)
        for src, dst, _kind in story.edges:
            column[dst] = max(column[dst], column[src] + 1)
    main, step = [], story.start_at
    nexts = {src: dst for src, dst, kind in story.edges if kind == "next"}
    while step in column and step not in main:
        main.append(step)
        step = nexts.get(step)
    row = {s: 0 if s in main else 1 for s in story.steps}
    return column, row


def layout(story: Story) -> Layout:
    column, row = _columns(story)
    nodes = {
        s: Box(GRAPH_LEFT + column[s] * COL_W, GRAPH_TOP + row[s] * ROW_H, NODE_W, NODE_H)
        for s in story.steps
    }
    graph_bottom = max((b.y + b.h for b in nodes.values()), default=GRAPH_TOP)
    axis_top = graph_bottom + 90
    subjects: list[tuple[str, Lane]] = []
    for lane in (Lane.HTTP, Lane.QUEUE):
        subjects += sorted({(e.subject, e.lane) for e in story.entries if e.lane is lane})
    subjects += [(s, Lane.STEP) for s in story.steps]
    subjects += sorted({(e.subject, e.lane) for e in story.entries if e.lane is Lane.CONSUMER})
    lanes = [(s, ln, axis_top + 30 + i * LANE_H + LANE_H / 2) for i, (s, ln) in enumerate(subjects)]
    times = [e.at for e in story.entries if e.at is not None]
    ends = [e.at + (e.duration_ms or 0) / 1000 for e in story.entries if e.at is not None]
    t0, t1 = (min(times), max(ends)) if times else (0.0, 1.0)
    height = axis_top + 30 + len(lanes) * LANE_H + 130
    return Layout(nodes=nodes, lanes=lanes, axis_top=axis_top, height=height, t0=t0, t1=t1)


def height(story: Story) -> int:
    """The page's height in CSS pixels (the SVG's)."""
    return int(layout(story).height)


def _text(
    x: float,
    y: float,
    body: str,
    *,
    size: int = 13,
    weight: str = "normal",
    fill: str = "#1f2328",
    anchor: str = "start",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-weight="{weight}" fill="{fill}" '
        f'text-anchor="{anchor}">{escape(body)}</text>'
    )


def _graph(story: Story, lay: Layout) -> list[str]:
    out = [
        '<g id="graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>',
    ]
    catches = 0
    for src, dst, kind in story.edges:
        a, b = lay.nodes[src], lay.nodes[dst]
        if kind == "next" and a.y == b.y:
            out.append(
                f'<line x1="{a.x + a.w:.1f}" y1="{a.y + a.h / 2:.1f}" x2="{b.x:.1f}" '
                f'y2="{b.y + b.h / 2:.1f}" stroke="#57606a" stroke-width="1.5" marker-end="url(#arrow)"/>'
            )
            continue
        # Catch edges run down from the source, along a rail above the lower row, into the target.
        catches += 1
        sx, sy = a.x + a.w / 2 - 30 + 12 * catches, a.y + a.h
        rail = b.y - 10 - 7 * catches
        tx = b.x + b.w / 2 - 30 + 12 * catches
        points = f"{sx:.1f},{sy:.1f} {sx:.1f},{rail:.1f} {tx:.1f},{rail:.1f} {tx:.1f},{b.y:.1f}"
        if b.y <= a.y:
            points = f"{a.x + a.w:.1f},{a.y + a.h / 2:.1f} {b.x:.1f},{b.y + b.h / 2:.1f}"
        out.append(
            f'<polyline points="{points}" fill="none" stroke="#57606a" stroke-width="1.5" '
            'stroke-dasharray="5,4" marker-end="url(#arrow)"/>'
        )
        if kind != "next":
            out.append(_text(sx + 5, sy + 13, kind.removeprefix("catch "), size=11, fill="#57606a"))
    for step in story.steps:
        box, state = lay.nodes[step], story.step_state(step)
        count = story.invocations(step)
        text_fill = "#1f2328" if state is StepState.NOT_RUN else "#ffffff"
        out.append(
            f'<g class="step" data-step="{escape(step)}" data-state="{state.value}" data-attempts="{count}">'
            f'<rect x="{box.x}" y="{box.y}" width="{box.w}" height="{box.h}" rx="8" '
            f'fill="{STATE_COLOUR[state]}"/>'
            + _text(box.x + box.w / 2, box.y + 24, step, weight="bold", fill=text_fill, anchor="middle")
            + _text(
                box.x + box.w / 2,
                box.y + 44,
                f"{state.value} · {count} attempt{'s' * (count != 1)}",
                size=12,
                fill=text_fill,
                anchor="middle",
            )
            + "</g>"
        )
    out.append("</g>")
    return out


def _legend(y: float) -> list[str]:
    out, x = [], GRAPH_LEFT
    for state, colour in STATE_COLOUR.items():
        out.append(f'<rect x="{x}" y="{y - 11}" width="14" height="14" rx="3" fill="{colour}"/>')
        out.append(_text(x + 20, y, state.value, size=12))
        x += 130
    return out


def _bar(entry: Entry, lay: Layout, y: float) -> str:
    x = lay.x_of(entry.at or lay.t0)
    width = max(MIN_BAR, lay.x_of((entry.at or lay.t0) + (entry.duration_ms or 0) / 1000) - x)
    title = f"{clock(entry.at)} {entry.subject}: {entry.outcome.value}"
    if entry.duration_ms is not None:
        title += f" ({entry.duration_ms:.0f} ms)"
    if entry.detail:
        title += f" - {entry.detail}"
    return (
        f'<rect class="attempt" data-outcome="{entry.outcome.value}" x="{x:.1f}" y="{y - BAR_H / 2:.1f}" '
        f'width="{width:.1f}" height="{BAR_H}" rx="3" fill="{OUTCOME_COLOUR[entry.outcome]}">'
        f"<title>{escape(title)}</title></rect>"
    )


def _timeline(story: Story, lay: Layout) -> list[str]:
    out = [
        '<g id="timeline">',
        _text(GRAPH_LEFT, lay.axis_top, "attempts on a time axis (UTC)", size=15, weight="bold"),
    ]
    bottom = lay.lanes[-1][2] + LANE_H / 2 if lay.lanes else lay.axis_top + 40
    executions = [e for e in story.entries if e.lane is Lane.EXECUTION]
    spans: dict[str, list[Entry]] = defaultdict(list)
    for e in executions:
        spans[e.subject].append(e)
    for name, marks in spans.items():
        times = [m.at for m in marks if m.at is not None]
        if not times:
            continue
        x1, x2 = lay.x_of(min(times)), lay.x_of(max(times)) + MIN_BAR
        end = marks[-1].outcome
        out.append(
            f'<rect class="execution" x="{x1:.1f}" y="{lay.axis_top + 14}" width="{max(x2 - x1, 2):.1f}" '
            f'height="{bottom - lay.axis_top - 14:.1f}" fill="{OUTCOME_COLOUR[end]}" fill-opacity="0.07" '
            f'stroke="{OUTCOME_COLOUR[end]}" stroke-opacity="0.5"/>'
        )
        label = f"{name.removeprefix(story.entity_id + '-')}: {marks[0].outcome.value} → {end.value}"
        near_right = x1 > AXIS_RIGHT - 300
        out.append(
            _text(
                x2 - 4 if near_right else x1 + 4,
                lay.axis_top + 26,
                label,
                size=11,
                fill=OUTCOME_COLOUR[end],
                anchor="end" if near_right else "start",
            )
        )
    for subject, lane, y in lay.lanes:
        out.append(f'<line x1="{AXIS_LEFT}" y1="{y:.1f}" x2="{AXIS_RIGHT}" y2="{y:.1f}" stroke="#eaeef2"/>')
        out.append(_text(AXIS_LEFT - 10, y + 4, f"{subject}", size=12, anchor="end"))
        out.append(_text(GRAPH_LEFT, y + 4, lane.value, size=10, fill="#8c959f"))
        for entry in story.entries:
            if entry.subject == subject and entry.lane is lane and entry.at is not None:
                out.append(_bar(entry, lay, y))
    out.append(_text(AXIS_LEFT, bottom + 18, clock(lay.t0), size=11, fill="#57606a"))
    out.append(_text(AXIS_RIGHT, bottom + 18, clock(lay.t1), size=11, fill="#57606a", anchor="end"))
    x = AXIS_LEFT
    for outcome in (
        Outcome.RAN,
        Outcome.SKIPPED,
        Outcome.TAKEOVER,
        Outcome.DIED,
        Outcome.COMPENSATED,
        Outcome.CONFLICT,
    ):
        out.append(
            f'<rect x="{x}" y="{bottom + 34}" width="14" height="14" rx="3" '
            f'fill="{OUTCOME_COLOUR[outcome]}"/>'
        )
        out.append(_text(x + 20, bottom + 46, outcome.value, size=12))
        x += 150
    out.append("</g>")
    return out


def render(story: Story) -> str:
    lay = layout(story)
    providers = " · ".join(
        f"{port}: {facts.get('summary', '')}" for port, facts in story.facts.get("providers", {}).items()
    )
    verdict = story.verdict if not story.violations else "VIOLATED: " + "; ".join(story.violations)
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{lay.height:.0f}" '
        f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
        f'<rect width="{WIDTH}" height="{lay.height:.0f}" fill="#ffffff"/>',
        _text(
            GRAPH_LEFT,
            34,
            f"{service().entity.name} {story.entity_id} · {story.status}",
            size=20,
            weight="bold",
        ),
        _text(
            GRAPH_LEFT,
            58,
            f"Idempotency-Key {story.client_key or '-'} · run {story.run} · {story.total}"
            + (f" · {providers}" if providers else ""),
            size=13,
        ),
        _text(
            GRAPH_LEFT,
            80,
            f"invariants: {verdict}",
            size=13,
            weight="bold",
            fill="#d64545" if story.violations else "#2e9e5b",
        ),
        *_graph(story, lay),
        *_legend(lay.axis_top - 40),
        *_timeline(story, lay),
        "</svg>",
    ]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(story.entity_id)}: its story</title>"
        "<style>html,body{margin:0;padding:0;background:#fff}svg{display:block}</style></head><body>\n"
        + "\n".join(svg)
        + "\n</body></html>\n"
    )
