"""`make story ID=<id>` (or `KEY=<Idempotency-Key>`): one entity's story.

    python -m ops.story o-0123...                 # timeline in the terminal (colour on a TTY)
    python -m ops.story --key my-key --json       # for tools
    python -m ops.story o-0123... --format html   # the picture, written to a file

Reads the target `ops.target` resolves (the local cloud's stores, execution history and log files;
a deployed stage's, with CloudWatch Logs Insights, when AWS_PROFILE/AWS_ENDPOINT_URL is set). With
no target running, a story the demo recorded (`<state dir>/stories/<id>.json`) is shown instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from ops.service import service
from ops.story import browser, html, text
from ops.story.collect import Collector, EntityNotFound, add_caller_argument, create_route
from ops.story.logs import InsightsLogs, LocalLogFiles
from ops.story.model import Story
from ops.target import DEFAULT_STAGE, Target, TargetNotFound
from reliability.http import ANONYMOUS, scoped_key


def state_dir() -> Path:
    return Path(os.environ.get("LOCALCLOUD_DIR") or ".localcloud")


def stories_dir() -> Path:
    return state_dir() / "stories"


def entity_for_key(raw_key: str, *, stage: str, caller: str = ANONYMOUS) -> str:
    """The entity a caller's Idempotency-Key created (its id is derived from the stored key:
    `reliability.declaration.Entity.id_for`)."""
    scoped = scoped_key(stage=stage, route=create_route(), raw_key=raw_key, caller=caller)
    return service().entity.id_for(scoped.value)


def collector_for(target: Target) -> Collector:
    logs = LocalLogFiles(state_dir() / "logs") if target.local else InsightsLogs(target.client("logs"))
    return Collector(outputs=target.outputs, client=target.client, logs=logs)


def load_recorded(entity_id: str) -> Story | None:
    path = stories_dir() / f"{entity_id}.json"
    return Story.from_dict(json.loads(path.read_text())) if path.exists() else None


def write(story: Story, fmt: str, out: Path | None, *, color: bool) -> str:
    """Render; a page (html, png: the page in headless Chromium, terminal-png: the coloured timeline
    as a terminal shows it) is written to `out` (default under `<state dir>/stories/`) and its
    path returned."""
    if fmt == "json":
        return json.dumps(story.to_dict(), indent=2, default=str)
    if fmt in ("html", "png"):
        path = (out or stories_dir() / f"{story.entity_id}.html").with_suffix(".html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html.render(story))
        if fmt == "png":
            png = browser.screenshot(
                path, path.with_suffix(".png"), width=html.WIDTH, height=html.height(story)
            )
            return f"wrote {path} and {png}"
        return f"wrote {path}"
    if fmt == "terminal-png":
        page = (out or stories_dir() / f"{story.entity_id}-terminal.html").with_suffix(".html")
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text.terminal_page(story))
        lines = text.render(story, color=False).count("\n") + 2
        png = browser.screenshot(page, page.with_suffix(".png"), width=1440, height=int(lines * 17.6) + 30)
        return f"wrote {png}"
    return text.render(story, color=color)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.story", description=__doc__.splitlines()[0])
    entity = service().entity
    parser.add_argument(
        "entity_id", nargs="?", metavar="ID", help=f"the {entity.name}'s id ({entity.id_prefix}...)"
    )
    parser.add_argument("--key", help=f"the client's Idempotency-Key instead of the {entity.name}'s id")
    add_caller_argument(parser)
    parser.add_argument("--format", choices=("text", "json", "html", "png", "terminal-png"), default="text")
    parser.add_argument("--json", action="store_const", const="json", dest="format", help="= --format json")
    parser.add_argument(
        "--out", type=Path, help="where a page is written (default <state dir>/stories/<id>.html)"
    )
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    if not args.entity_id and not args.key:
        parser.error("name an entity (ID=<id>) or a key (KEY=...)")
    color = args.color == "always" or (
        args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    )
    note = ""
    try:
        target = Target.resolve()
        stage = "local" if target.local else os.environ.get("RETRYSAFE_STAGE", DEFAULT_STAGE)
        entity_id = args.entity_id or entity_for_key(args.key, stage=stage, caller=args.caller)
        story = collector_for(target).collect(entity_id)
    except EntityNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (TargetNotFound, BotoCoreError, ClientError, OSError) as error:
        entity_id = args.entity_id or entity_for_key(args.key, stage="local", caller=args.caller)
        recorded = load_recorded(entity_id)
        if recorded is None:
            print(f"error: {error}", file=sys.stderr)
            return 2
        story = recorded
        recorded_at = stories_dir() / f"{entity_id}.json"
        note = f"(no running target: {error}; showing the story recorded in {recorded_at})"
    if note:
        print(note, file=sys.stderr)
    print(write(story, args.format, args.out, color=color))
    return 0


if __name__ == "__main__":
    sys.exit(main())
