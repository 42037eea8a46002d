"""Every `make` command the docs show names a target this Makefile has and only variables it
reads: README, DEVELOPERS, the site's pages, the packages' READMEs and the results pages (their
"Written by" lines), in code blocks and code spans, and the Makefile's own help texts. A target
renamed or a variable dropped (`FUZZ_ARGS=`, `EVENT=`, `MUTANTS=`) fails here, not on a reader's
fresh clone. The template's pages (template/) are the copy's, with a Makefile of their own."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.sections import ROOT, tracked_files

MAKEFILE = (ROOT / "Makefile").read_text()
TARGETS = frozenset(re.findall(r"^([a-zA-Z0-9_-]+):.*## ", MAKEFILE, re.M))
# What a recipe reads: `$(NAME)` anywhere, and the variables the Makefile itself assigns.
READ = frozenset(re.findall(r"\$\(([A-Z_][A-Z0-9_]*)\)", MAKEFILE)) | frozenset(
    re.findall(r"^(?:export\s+)?([A-Z_][A-Z0-9_]*)\s*[?:]?=", MAKEFILE, re.M)
)

_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`([^`\n]+)`")
# `make <target>` at the start of a command (after a prompt, `&&`, `;`, `(` or NAME=value
# prefixes), then its NAME=value arguments; `make redrive-*` is a pattern, not a target.
_COMMAND = re.compile(
    r"(?:^|[\s;&|(])make\s+(?P<target>[a-z][a-z0-9-]*)(?![\w*-])"
    r"(?P<arguments>(?:\s+[A-Z_][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|[^\s`]*))*)"
)
_ARGS = re.compile(r"(?<![\w$(])([A-Z][A-Z0-9_]*_ARGS)=")


def code(text: str) -> list[tuple[int, str]]:
    """(line, text) of each code block line and each code span of a Markdown text."""
    found: list[tuple[int, str]] = []
    in_block = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_block = not in_block
        elif in_block:
            found.append((number, line))
        else:
            found += [(number, span) for span in _SPAN.findall(line)]
    return found


def help_texts(makefile: str) -> list[tuple[int, str]]:
    return [
        (number, line.split("## ", 1)[1])
        for number, line in enumerate(makefile.splitlines(), start=1)
        if re.match(r"^[a-zA-Z0-9_-]+:.*## ", line)
    ]


def command_problems(where: str, fragments: list[tuple[int, str]]) -> list[str]:
    problems = []
    for number, fragment in fragments:
        # The variables a make command passes, and every `<NAME>_ARGS=` (the Makefile's way of
        # passing a command's own options, shown on its own as often as after `make <target>`).
        passed = dict.fromkeys(_ARGS.findall(fragment))
        for match in _COMMAND.finditer(fragment):
            if match["target"] not in TARGETS:
                problems.append(f"{where}:{number}: `make {match['target']}`: no such target")
            passed.update(dict.fromkeys(re.findall(r"([A-Z_][A-Z0-9_]*)=", match["arguments"])))
        problems += [
            f"{where}:{number}: `{name}=`: the Makefile never reads {name}"
            for name in passed
            if name not in READ
        ]
    return problems


def pages() -> list[Path]:
    return [
        path
        for path in tracked_files()
        if path.suffix == ".md" and path.relative_to(ROOT).parts[0] not in {"template", "tests"}
    ]


def test_the_pages_are_read() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in pages()}
    assert {"README.md", "DEVELOPERS.md", "docs/local-cloud.md", "lab/README.md", "scale/README.md"} <= names


def test_every_make_command_the_docs_show_names_a_target_and_variables_the_makefile_has() -> None:
    problems = [
        problem
        for path in pages()
        for problem in command_problems(path.relative_to(ROOT).as_posix(), code(path.read_text()))
    ]
    problems += command_problems("Makefile", help_texts(MAKEFILE))
    assert not problems, "\n".join(problems)


def test_a_stale_target_or_variable_is_found_and_prose_is_not_read() -> None:
    # Given a page with a renamed target, a dropped variable, a pattern, prose and a good command
    page = (
        "The make targets come from `make help`; `make redrive-*` fall back.\n"
        "```bash\n"
        'make fuzz FUZZ_OPTIONS="--requests 5" && LOCALCLOUD_DIR=x make story ORDER=o-1\n'
        "make e2e-local-stack\n"
        "```\n"
        "Run `make invoke EVENT=events/api/create_order.json FN=api`; `SCALE_OPTS_ARGS=` for others.\n"
    )
    # Then only the two stale ones are problems
    assert command_problems("page.md", code(page)) == [
        "page.md:3: `FUZZ_OPTIONS=`: the Makefile never reads FUZZ_OPTIONS",
        "page.md:4: `make e2e-local-stack`: no such target",
        "page.md:6: `SCALE_OPTS_ARGS=`: the Makefile never reads SCALE_OPTS_ARGS",
    ]
