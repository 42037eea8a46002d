"""Reading the project's Markdown as MkDocs does: its headings, their anchors, its relative links."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def plain(text: str) -> str:
    """A heading or a reference as a reader sees it: no Markdown, one space between words."""
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"[`*_]", "", text)
    return " ".join(text.split())


def slug(heading: str) -> str:
    """Python-Markdown's toc slugify, which MkDocs uses for every anchor."""
    value = unicodedata.normalize("NFKD", plain(heading)).encode("ascii", "ignore").decode()
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


@cache
def headings(path: Path) -> tuple[str, ...]:
    """Every heading of a Markdown file outside code blocks, as plain text."""
    found: list[str] = []
    in_code = False
    for line in path.read_text().splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            continue
        match = None if in_code else _HEADING.match(line)
        if match:
            found.append(plain(match.group(2)))
    return tuple(found)


def anchors(path: Path) -> set[str]:
    return {slug(heading) for heading in headings(path)}


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative Markdown link outside code blocks."""
    found: list[tuple[int, str]] = []
    in_code = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        for _, target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                found.append((number, target))
    return found


@cache
def tracked_files() -> tuple[Path, ...]:
    """The files git tracks, and new ones not ignored: what a clone of this tree will have."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    return tuple(ROOT / name for name in listed if (ROOT / name).is_file())
