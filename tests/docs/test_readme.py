"""README stays true: its layout table names every top-level directory of the repository (and only
paths that exist), and every command it shows in a code block is run by a test or by CI."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.sections import ROOT, tracked_files

README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
MAKEFILE = ROOT / "Makefile"
# A command README shows that CI does not run, and the test that runs what its recipe runs.
RUN_BY_TEST = {
    "demo": "tests/e2e/test_demo.py",
    "new-service": "tests/template/test_copy.py",
}


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f'README has no section "{title}"'
    return match.group(1)


def layout_rows(readme: str) -> list[tuple[list[str], list[str]]]:
    """(paths of the first column, backticked names of the second) of each row of the layout table."""
    rows = []
    for line in section(readme, "Layout").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", " "} or cells[0] == "path":
            continue
        rows.append((re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1])))
    return rows


def top_level_directories() -> set[str]:
    parts = [path.relative_to(ROOT).parts for path in tracked_files()]
    return {part[0] for part in parts if len(part) > 1}


def layout_problems(readme: str, root: Path = ROOT) -> list[str]:
    rows = layout_rows(readme)
    named = {path.rstrip("/") for paths, _ in rows for path in paths}
    missing = sorted(top_level_directories() - named)
    problems = [f"`{name}/` is not in README's layout table" for name in missing]
    for paths, names in rows:
        problems += [f"`{path}` does not exist" for path in paths if not (root / path).exists()]
        # A row of one directory may name its subdirectories (`unit/`): each must be there.
        if len(paths) == 1 and paths[0].endswith("/"):
            problems += [
                f"`{paths[0]}{name}` does not exist"
                for name in names
                if name.endswith("/") and "/" not in name[:-1] and not (root / paths[0] / name).is_dir()
            ]
    return problems


def shown_commands(readme: str) -> list[str]:
    """Each command line of README's shell code blocks, without its comment."""
    commands = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", readme, re.S | re.M):
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command:
                commands.append(command)
    return commands


def prerequisites(makefile: str) -> dict[str, list[str]]:
    rules: dict[str, list[str]] = {}
    for match in re.finditer(r"^([a-zA-Z0-9_-]+):([^=\n]*?)(?:##.*)?$", makefile, re.M):
        rules[match.group(1)] = match.group(2).split()
    return rules


def run_by_ci(target: str) -> bool:
    """CI runs `make <target>`, or a target that depends on it."""
    rules = prerequisites(MAKEFILE.read_text())
    seen: set[str] = set()
    todo = re.findall(r"^\s*make ([a-z0-9-]+)\s*$", CI.read_text(), re.M)
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current not in seen:
            seen.add(current)
            todo += rules.get(current, [])
    return False


def recipe_module(target: str) -> str | None:
    """The Python module the target's recipe runs (`$(PY) -m <module>`)."""
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", MAKEFILE.read_text(), re.M)
    module = re.search(r"-m ([\w.]+)", match.group(1)) if match else None
    return module.group(1) if module else None


def runs_make_target(test: str, target: str) -> bool:
    """The test runs `make <target>` itself (its argument list names "make" and the target)."""
    return '"make"' in test and f'"{target}"' in test


def command_problems(commands: list[str]) -> list[str]:
    problems = []
    for command in commands:
        words = command.split()
        if words[0] != "make" or len(words) < 2:
            problems.append(f"`{command}`: README shows only make targets, which CI or a test runs")
            continue
        target = words[1]
        if run_by_ci(target):
            continue
        test = RUN_BY_TEST.get(target)
        if test is not None and runs_make_target((ROOT / test).read_text(), target):
            continue
        module = recipe_module(target)
        if test is None or module is None:
            problems.append(f"`{command}`: neither .ci/run nor a test in RUN_BY_TEST runs it")
        elif not re.search(rf"^(from|import) {re.escape(module)}\b", (ROOT / test).read_text(), re.M):
            problems.append(f"`{command}`: {test} does not run {module}, what `make {target}` runs")
    return problems


def test_the_layout_table_names_every_top_level_directory_and_only_what_exists() -> None:
    problems = layout_problems(README.read_text())
    assert not problems, "\n".join(problems)


def test_a_stale_or_missing_layout_row_is_found() -> None:
    # Given README's table without its `bench/` row and with a subdirectory that is gone
    readme = README.read_text()
    broken = re.sub(r"^\| `bench/` \|.*\n", "", readme, flags=re.M)
    broken = broken.replace("`unit/`, ", "`unit/`, `support/`, ", 1)
    # Then both are named
    assert layout_problems(broken) == [
        "`bench/` is not in README's layout table",
        "`tests/support/` does not exist",
    ]


def test_every_command_readme_shows_is_run_by_a_test_or_ci() -> None:
    commands = shown_commands(README.read_text())
    assert {"make demo", "make test"} <= set(commands), "the quick start's two commands"
    problems = command_problems(commands)
    assert not problems, "\n".join(problems)


def test_a_command_nothing_runs_is_found() -> None:
    assert command_problems(["make chaos", "curl -s localhost"]) == [
        "`make chaos`: neither .ci/run nor a test in RUN_BY_TEST runs it",
        "`curl -s localhost`: README shows only make targets, which CI or a test runs",
    ]


def test_the_quick_start_is_within_the_first_60_lines_and_readme_stays_short() -> None:
    lines = README.read_text().splitlines()
    assert "## Quick start" in lines[:60]
    assert len(lines) <= 160
    assert len((ROOT / "DEVELOPERS.md").read_text().splitlines()) <= 160
