"""The story as terminal text: one line per entry, coloured by outcome on a TTY, plain when piped."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from html import escape

from ops.service import service
from ops.story.model import Entry, Outcome, StepState, Story

# ANSI SGR codes, by what the outcome means to an operator.
_GOOD, _REPLAY, _WARN, _BAD, _DIM, _BOLD = "32", "36", "33", "31", "2", "1"
OUTCOME_STYLE: dict[Outcome, str] = {
    Outcome.EXECUTED: _GOOD,
    Outcome.REPLAYED: _REPLAY,
    Outcome.CONFLICT: _WARN,
    Outcome.MISMATCH: _WARN,
    Outcome.STARTED: _GOOD,
    Outcome.DEDUP_HIT: _REPLAY,
    Outcome.POISON: _BAD,
    Outcome.RAN: _GOOD,
    Outcome.SKIPPED: _REPLAY,
    Outcome.TAKEOVER: _WARN,
    Outcome.STALE: _BAD,
    Outcome.BUSY: _WARN,
    Outcome.FAILED: _BAD,
    Outcome.DIED: _BAD,
    Outcome.COMPENSATED: _WARN,
    Outcome.APPLIED: _GOOD,
    Outcome.DEDUPLICATED: _REPLAY,
    Outcome.RETRY: _WARN,
    Outcome.EXECUTION_STARTED: _BOLD,
    Outcome.REDRIVEN: _WARN,
    Outcome.SUCCEEDED: _GOOD,
    Outcome.EXECUTION_FAILED: _BAD,
    Outcome.ABORTED: _BAD,
    Outcome.TIMED_OUT: _BAD,
    Outcome.RUNNING: _DIM,
}
STATE_STYLE: dict[StepState, str] = {
    StepState.NOT_RUN: _DIM,
    StepState.COMPENSATED: _WARN,
    StepState.FAILED: _BAD,
    StepState.RETRIED: _WARN,
    StepState.SKIPPED: _REPLAY,
    StepState.RAN: _GOOD,
}

Paint = Callable[[str, str], str]


def ansi(text: str, style: str) -> str:
    return f"\033[{style}m{text}\033[0m"


def plain(text: str, _style: str) -> str:
    return text


def clock(at: float | None) -> str:
    return (
        datetime.fromtimestamp(at, tz=UTC).strftime("%H:%M:%S.%f")[:-3] if at is not None else "--:--:--.---"
    )


def _entry(entry: Entry, paint: Paint) -> str:
    duration = f"{entry.duration_ms:7.0f} ms" if entry.duration_ms is not None else " " * 10
    attempt = f"  attempt {entry.attempt[:8]}" if entry.attempt else ""
    detail = f"  {entry.detail}" if entry.detail else ""
    outcome = paint(f"{entry.outcome.value:<18}", OUTCOME_STYLE[entry.outcome])
    return (
        f"{clock(entry.at)}  {entry.lane.value:<9}  {entry.subject:<48} {outcome} {duration}{attempt}{detail}"
    )


def render(story: Story, *, color: bool) -> str:
    paint: Paint = ansi if color else plain
    day = next((e.at for e in story.entries if e.at is not None), None)
    date = datetime.fromtimestamp(day, tz=UTC).strftime("%Y-%m-%d") if day else "?"
    lines = [
        paint(f"{service().entity.name} {story.entity_id}", _BOLD)
        + f"  {story.status}  run {story.run}  {story.total}",
        f"Idempotency-Key {story.client_key or '(hashed: ' + str(story.facts.get('stored_key')) + ')'}",
        f"execution tokens {', '.join(story.facts.get('tokens', [])) or '-'}",
        "",
        f"timeline ({date}, UTC)",
        *(_entry(entry, paint) for entry in story.entries),
        "",
        "steps (all attempts):",
    ]
    for step in story.steps:
        state = story.step_state(step)
        attempts = story.attempts(step)
        outcomes = ", ".join(e.outcome.value for e in attempts) or "-"
        fence = story.facts.get("fences", {}).get(step)
        fence_text = f"  fence {fence['state']} #{fence.get('fencing_token', 0)}" if fence else ""
        lines.append(
            f"  {step:<18} {paint(f'{state.value:<12}', STATE_STYLE[state])} "
            f"{story.invocations(step)} invocation(s): {outcomes}{fence_text}"
        )
    lines.append("")
    effects = story.facts.get("effects", {})
    if effects:
        lines.append("effects: " + ", ".join(f"{entry} {n}" for entry, n in effects.items()))
    lines += [
        f"{port}: {facts.get('summary', '')}" for port, facts in story.facts.get("providers", {}).items()
    ]
    verdict_style = _BAD if story.violations else _GOOD
    lines.append("invariants: " + paint(story.verdict if not story.violations else "VIOLATED", verdict_style))
    lines.extend(f"  - {v}" for v in story.violations)
    return "\n".join(lines)


# How a dark terminal shows the SGR codes above, for `terminal_page`.
_TERMINAL_CSS = {
    _GOOD: "color:#4ec97b",
    _REPLAY: "color:#4fc1e9",
    _WARN: "color:#f0c24b",
    _BAD: "color:#f2545b",
    _DIM: "color:#7f8790",
    _BOLD: "font-weight:bold;color:#ffffff",
}
_SGR = re.compile(r"\033\[(\d+)m(.*?)\033\[0m", re.DOTALL)


def terminal_page(story: Story) -> str:
    """The coloured timeline as a terminal shows it, as an HTML page (for a screenshot of it)."""
    coloured = render(story, color=True)
    out, last = [], 0
    for match in _SGR.finditer(coloured):
        out.append(escape(coloured[last : match.start()]))
        out.append(f'<span style="{_TERMINAL_CSS[match[1]]}">{escape(match[2])}</span>')
        last = match.end()
    out.append(escape(coloured[last:]))
    return (
        '<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0;background:#1e1e1e}'
        "pre{margin:0;padding:14px 18px;color:#d4d4d4;font:13px/1.35 'DejaVu Sans Mono',monospace}</style>"
        f"</head><body><pre>$ make story ID={escape(story.entity_id)}\n{''.join(out)}</pre></body></html>\n"
    )
