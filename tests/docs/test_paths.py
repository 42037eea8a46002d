"""Docs name only paths that are there: every repository path README, DEVELOPERS, the library's
README and the site's pages write (`infra/stacks/app.py`, `chaos/results/`) is a file or folder
of this tree, or one the tools write and git ignores. A path is read from the doc's own folder
first (the library's README names its `tests/`), then from the repository's root."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

from tests.docs.sections import ROOT, tracked_files

DOCS = (
    ROOT / "README.md",
    ROOT / "DEVELOPERS.md",
    ROOT / "lib" / "reliability" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
)
# Files a page tells the reader to write, as examples of where their own code goes.
EXAMPLES = {"functions/orders/screening.py"}


@cache
def top_folders() -> tuple[str, ...]:
    parts = (path.relative_to(ROOT).parts for path in tracked_files())
    return tuple(sorted({part[0] for part in parts if len(part) > 1}))


@cache
def tracked() -> frozenset[str]:
    """Every tracked file and every folder above one, relative to the root."""
    names: set[str] = set()
    for path in tracked_files():
        relative = path.relative_to(ROOT)
        names.add(relative.as_posix())
        names.update(parent.as_posix() for parent in relative.parents)
    return frozenset(names)


def named_paths(text: str, folders: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, path) of each path under one of `folders` the text names; a placeholder
    (`<stage>`, `{a,b}`) or a wildcard makes it a pattern, which names no one path."""
    pattern = re.compile(
        r"(?<![\w/.$<{-])((?:" + "|".join(map(re.escape, folders)) + r")/[\w./-]*)(?![\w./<{*-])"
    )
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in pattern.finditer(line):
            found.append((number, match[1].rstrip(".")))
    return found


def ignored(path: str) -> bool:
    """A path the tools write and git ignores (a results folder, a cache)."""
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False).returncode == 0


def missing_paths(doc: Path, names: frozenset[str], folders: tuple[str, ...]) -> list[str]:
    base = doc.parent.relative_to(ROOT) if ROOT in doc.parents else Path()
    problems = []
    for line, path in named_paths(doc.read_text(), folders):
        bare = path.rstrip("/")
        candidates = [(base / bare).as_posix(), bare]
        if path in EXAMPLES or any(name in names for name in candidates) or ignored(bare):
            continue
        problems.append(f"{doc.relative_to(ROOT) if ROOT in doc.parents else doc.name}:{line}: {path}")
    return problems


def test_every_path_a_doc_names_exists() -> None:
    problems = [problem for doc in DOCS for problem in missing_paths(doc, tracked(), top_folders())]
    assert not problems, "paths the docs name that are not in the tree:\n" + "\n".join(problems)


def test_paths_are_read_from_prose_code_and_tables(tmp_path: Path) -> None:
    # Given a page naming paths in prose, in code spans, in a table and as patterns
    page = tmp_path / "page.md"
    page.write_text(
        "Built by `infra/stacks/app.py` (see infra/app.py).\n"
        "| `chaos/results/` | the report, chaos/results/report.md. |\n"
        "Per stage: `cdk.out/<stage>/`, `bench/results/{cost,coldstart}.md`, `events/*/x.json`,\n"
        "a route /infra/x, a module infra.app.\n"
    )
    names = frozenset({"infra", "infra/app.py", "chaos", "chaos/results", "chaos/results/report.md"})
    # When the paths it names are checked, Then only the one not in the tree is a problem
    assert named_paths(page.read_text(), ("bench", "chaos", "events", "infra")) == [
        (1, "infra/stacks/app.py"),
        (1, "infra/app.py"),
        (2, "chaos/results/"),
        (2, "chaos/results/report.md"),
    ]
    assert missing_paths(page, names, ("bench", "chaos", "events", "infra")) == [
        "page.md:1: infra/stacks/app.py"
    ]
