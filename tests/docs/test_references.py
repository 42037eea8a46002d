"""Docs cannot lie silently: every section a file names exists, and every relative link lands.

A reference to a section is written `README, "<Heading>"`, `DEVELOPERS.md, "<Heading>"` or
`docs/<page>.md, "<Heading>"` (README's and DEVELOPERS's sections, the site's pages), or as a path
with an anchor, `docs/<page>.md#<anchor>`; comments, docstrings, messages and pages all use these
forms. The site's own links are checked by `make docs` in strict mode; README.md and DEVELOPERS.md
are not part of the site, so their links are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.sections import ROOT, anchors, headings, links, plain, tracked_files

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".sh", ".json"}
TEXT_NAMES = {"Makefile", "run"}
# The checker's own files spell the forms as examples.
CHECKERS = ROOT / "tests" / "docs"

_DOC = r"(?<![\w/.-])(?P<file>README(?:\.md)?|DEVELOPERS(?:\.md)?|docs/[\w/-]+\.md)(?P<anchor>#[\w-]+)?"
# The heading may wrap onto the next line of a comment or docstring.
_NAMED = re.compile(
    _DOC
    + r"(?:'s)?,\s*(?:#\s*)?(?:section\s+)?"
    + r"(?P<q>[\"'])(?P<heading>[^\n]{1,100}?(?:\n[ \t#]*[^\n]{1,100}?)?)(?P=q)"
)
_PATH = re.compile(_DOC)


def document(name: str) -> Path:
    return ROOT / (name if name.endswith(".md") else f"{name}.md")


def _sources() -> list[Path]:
    return [
        path
        for path in tracked_files()
        if (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES) and CHECKERS not in path.parents
    ]


def references(text: str) -> list[tuple[int, str, str | None, str | None]]:
    """(line, file, anchor, heading) of each reference to a README, DEVELOPERS or docs section."""
    found: dict[int, tuple[int, str, str | None, str | None]] = {}
    for match in _NAMED.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        heading = plain(re.sub(r"\n[ \t#]*", " ", match["heading"]))
        found[match.start()] = (line, match["file"], match["anchor"], heading)
    for match in _PATH.finditer(text):
        if match.start() not in found:
            line = text.count("\n", 0, match.start()) + 1
            found[match.start()] = (line, match["file"], match["anchor"], None)
    return [found[start] for start in sorted(found)]


def broken_references(path: Path) -> list[str]:
    problems = []
    shown = path.relative_to(ROOT) if ROOT in path.parents else path.name
    for line, name, anchor, heading in references(path.read_text(errors="replace")):
        target = document(name)
        where = f"{shown}:{line}"
        if not target.is_file():
            problems.append(f"{where}: {name} does not exist")
        elif heading is not None and heading not in headings(target):
            problems.append(f'{where}: {name} has no section "{heading}"')
        elif anchor is not None and anchor[1:] not in anchors(target):
            problems.append(f"{where}: {name} has no anchor {anchor}")
    return problems


def broken_links(path: Path) -> list[str]:
    problems = []
    for line, target in links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{line}"
        if not destination.exists():
            problems.append(f"{where}: {target} does not exist")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where}: {target}: no such anchor")
    return problems


def test_every_section_named_in_code_or_docs_exists() -> None:
    problems = [problem for path in _sources() for problem in broken_references(path)]
    assert not problems, "references to sections that do not exist:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", ["README.md", "DEVELOPERS.md"])
def test_every_relative_link_of_readme_and_developers_lands(name: str) -> None:
    problems = broken_links(ROOT / name)
    assert not problems, "\n".join(problems)


def test_the_reference_forms_are_read(tmp_path: Path) -> None:
    # Given a file naming sections in each form, one of them wrapped across two comment lines
    text = (
        '# see DEVELOPERS.md, "The test tiers" and docs/how-it-works.md,\n# "The workflow\n'
        '# contract"; README, "No such section"; docs/costs.md#cold-start; docs/nowhere.md\n'
    )
    # When it is read, Then each is found with its heading or anchor
    found = [(file, anchor, heading) for _, file, anchor, heading in references(text)]
    assert found == [
        ("DEVELOPERS.md", None, "The test tiers"),
        ("docs/how-it-works.md", None, "The workflow contract"),
        ("README", None, "No such section"),
        ("docs/costs.md", "#cold-start", None),
        ("docs/nowhere.md", None, None),
    ]
    # And the ones that name nothing are the problems
    source = tmp_path / "module.py"
    source.write_text(text)
    problems = [p.split(": ", 1)[1] for p in broken_references(source)]
    assert problems == ['README has no section "No such section"', "docs/nowhere.md does not exist"]
