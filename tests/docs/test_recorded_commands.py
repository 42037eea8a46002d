"""The command a results page says wrote it still runs as written: its module or script is there
and takes the arguments the page shows (`python -m ops.load --clients 16 ...`,
`python -m chaos.mutation --seed ...`). A flag renamed or a module moved (the lab moved to lab/src)
fails here, not on the reader who reruns the command to check a figure.

The arguments are checked by the command's own argparse parser: a probe runs the module with them
and stops it the moment its parser has accepted them, so nothing of the command itself runs. A
command that shows arguments must parse them with argparse, else it is named here."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.sections import ROOT, tracked_files

# The import path every recipe runs with: the Makefile's one export.
PYTHONPATH = re.search(r"^export PYTHONPATH := (\S+)$", (ROOT / "Makefile").read_text(), re.M)

_SPAN = re.compile(r"`([^`\n]+)`")
_PYTHON = re.compile(
    r"(?:^|[\s(])(?:\S*/)?python3?\s+(?:-m\s+(?P<module>[\w.]+)|(?P<script>[\w./-]+\.py))(?P<args>[^)]*)"
)

# Runs a module or script with the given arguments until its ArgumentParser has parsed them: exit 0
# then, exit 2 (argparse's) on an argument it does not take, exit 3 if it ends without parsing.
PROBE = r"""
import argparse, runpy, sys

class Parsed(BaseException):
    pass

original = argparse.ArgumentParser.parse_args

def parse_args(self, args=None, namespace=None):
    original(self, args, namespace)
    raise Parsed

argparse.ArgumentParser.parse_args = parse_args
kind, name, *arguments = sys.argv[1:]
sys.argv = [name, *arguments]
try:
    if kind == "module":
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = __import__("os").path.dirname(__import__("os").path.abspath(name))
        runpy.run_path(name, run_name="__main__")
except Parsed:
    sys.exit(0)
sys.exit(3)
"""


def recorded(text: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, module or script, arguments) of each Python command a page's code spans show."""
    found = []
    for span in _SPAN.findall(text):
        for match in _PYTHON.finditer(span):
            kind = "module" if match["module"] else "script"
            found.append((kind, match["module"] or match["script"], tuple(shlex.split(match["args"]))))
    return found


def results_pages() -> list[Path]:
    return [
        path
        for path in tracked_files()
        if path.suffix == ".md" and "results" in path.relative_to(ROOT).parts[:-1]
    ]


def source(kind: str, name: str, env: dict[str, str]) -> Path | None:
    """The file the command runs (a package's __main__), found on the recipes' import path."""
    if kind == "script":
        return ROOT / name if (ROOT / name).is_file() else None
    for folder in env["PYTHONPATH"].split(os.pathsep):
        base = ROOT / folder / Path(*name.split("."))
        for candidate in (base / "__main__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
    return None


def environment() -> dict[str, str]:
    assert PYTHONPATH, "the Makefile exports PYTHONPATH"
    dropped = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "PYTHONPATH": PYTHONPATH[1]}


COMMANDS = sorted(
    {
        (page.relative_to(ROOT).as_posix(), *command)
        for page in results_pages()
        for command in recorded(page.read_text())
    }
)


def test_the_results_pages_commands_are_read() -> None:
    names = {name for _, _, name, _ in COMMANDS}
    assert {"ops.load", "ops.fuzz", "chaos.mutation", "scale", "bench/cost.py"} <= names


@pytest.mark.parametrize(
    ("page", "kind", "name", "arguments"),
    COMMANDS,
    ids=[f"{page}: {name} {' '.join(arguments)}".strip() for page, _, name, arguments in COMMANDS],
)
def test_each_command_a_results_page_names_takes_the_arguments_it_shows(
    page: str, kind: str, name: str, arguments: tuple[str, ...]
) -> None:
    env = environment()
    # Given the file it runs, on the recipes' import path
    path = source(kind, name, env)
    assert path is not None, f"{page}: `{name}` is not in this tree (PYTHONPATH={env['PYTHONPATH']})"
    if not arguments:
        return
    assert "parse_args" in path.read_text(), f"{page}: `{name}` shows arguments but parses none with argparse"
    # When its parser reads the arguments the page shows, Then it takes them
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, kind, name, *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, f"{page}: `{name} {' '.join(arguments)}`: {probe.stderr.strip()[-600:]}"


def test_the_commands_and_their_arguments_are_read_from_code_spans() -> None:
    page = (
        "Command: `make fuzz (python -m ops.fuzz --requests 5000 --seed 11)` (seed 11).\n"
        "Written by `PYTHONPATH=functions:. .venv/bin/python bench/cost.py` (`make bench`), python -m x.\n"
    )
    assert recorded(page) == [
        ("module", "ops.fuzz", ("--requests", "5000", "--seed", "11")),
        ("script", "bench/cost.py", ()),
    ]
