"""Every Python entry point a Makefile recipe runs imports with the environment the Makefile gives
it, from a clean one (no PYTHONPATH inherited), so `make seed` on a fresh clone cannot fail with
`No module named 'orders'` again; and `make help` lists every target.

The commands are the ones `make -n <target>` prints, the environment the one make exports to every
recipe (read by running `env` as a recipe of its own) plus a command's own `NAME=value` prefixes.
An entry point's import check: its file's top-level imports, run in a fresh interpreter with that
environment and the working directory make gives it (nothing of the command itself is run).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()
NAME = r"[a-zA-Z0-9_-]+"  # a target's name, as `make help` reads it
TARGETS = re.findall(rf"^({NAME}):.*## ", MAKEFILE, re.MULTILINE)
# `$(PY) -m <module>` or `$(PY) <script>.py`, as make prints it (PY is the venv's python)
ENTRY = re.compile(r"(?:^|\s)\.venv/bin/python\s+(?:-m\s+(?P<module>[\w.]+)|(?P<script>[\w./-]+\.py))")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# Run in the command's environment: the entry point's top-level imports (a package run with -m
# runs its __main__), with sys.path[0] as Python sets it (the working directory for -m, the
# script's folder for a script). Prints the failure, exits 1.
PROBE = r"""
import ast, importlib.util, os, sys
kind, name = sys.argv[1:3]
if kind == "script":
    path = name
    sys.path[0] = os.path.dirname(os.path.abspath(name))
else:
    spec = importlib.util.find_spec(name)
    if spec is None:
        sys.exit(f"no module named {name!r}")
    path = spec.origin
    if spec.submodule_search_locations is not None:
        path = importlib.util.find_spec(name + ".__main__").origin
tree = ast.parse(open(path).read(), path)
imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
try:
    exec(compile(ast.Module(body=imports, type_ignores=[]), path, "exec"), {"__name__": "__probe__"})
except ImportError as error:
    sys.exit(f"{type(error).__name__}: {error}")
"""


def _clean_environment() -> dict[str, str]:
    """This process's environment without what would hide a missing path: the import path
    (pytest's own, or a developer's) and make's variables from an enclosing make."""
    dropped = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    return {name: value for name, value in os.environ.items() if name not in dropped}


def _make(*args: str, env: dict[str, str]) -> str:
    run = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return run.stdout


@cache
def _recipe_environment() -> dict[str, str]:
    """What make exports to every recipe, on top of the clean environment."""
    printed = _make("-s", "--eval", "__environment__: ; @env -0", "__environment__", env=_clean_environment())
    return dict(entry.split("=", 1) for entry in printed.split("\0") if "=" in entry)


def _entry_points() -> dict[tuple[str, str, tuple[tuple[str, str], ...]], str]:
    """Every entry point the targets' recipes run: (kind, module or script, the command's own
    NAME=value prefixes) -> the command, as `make -n` of every target prints it."""
    found: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
    for line in _make("-n", *TARGETS, env=_clean_environment()).splitlines():
        match = ENTRY.search(line)
        if not match:
            continue
        words = shlex.split(line[: match.start()].strip())
        prefixes = tuple(
            (word.partition("=")[0], word.partition("=")[2]) for word in words if ASSIGNMENT.match(word)
        )
        kind = "module" if match["module"] else "script"
        found.setdefault((kind, match["module"] or match["script"], prefixes), line.strip())
    return found


ENTRY_POINTS = _entry_points()


def test_the_recipes_run_python_entry_points() -> None:
    # The parse finds them (a Makefile that spelled $(PY) otherwise would leave nothing to check)
    assert {"ops.seed", "ops.rerun", "ops.invariants", "pytest", "bench/cost.py"} <= {
        name for _, name, _ in ENTRY_POINTS
    }


@pytest.mark.parametrize(
    ("kind", "name", "prefixes", "command"),
    [(kind, name, prefixes, command) for (kind, name, prefixes), command in ENTRY_POINTS.items()],
    ids=[command for command in ENTRY_POINTS.values()],
)
def test_every_entry_point_a_recipe_runs_imports_in_the_environment_make_gives_it(
    kind: str, name: str, prefixes: tuple[tuple[str, str], ...], command: str
) -> None:
    # Given the environment make gives the recipe, from a clean one
    env = {**_recipe_environment(), **dict(prefixes)}
    # When the entry point's imports run there, in make's working directory
    run = subprocess.run(
        [sys.executable, "-c", PROBE, kind, name],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then they import
    failure = run.stderr.strip().splitlines()[-1:]
    assert run.returncode == 0, f"`{command}`: {failure} (PYTHONPATH={env.get('PYTHONPATH')!r})"


def test_make_help_lists_every_target_and_every_target_is_phony() -> None:
    shown = _make("help", env=_clean_environment())
    listed = re.findall(rf"^\s+(?:\x1b\[\d+m)?({NAME})", shown, re.MULTILINE)
    phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", MAKEFILE, re.MULTILINE)
    assert phony
    declared = set(phony.group(1).replace("\\\n", " ").split())
    rules = set(re.findall(rf"^([a-zA-Z]{NAME}):(?!=)", MAKEFILE, re.MULTILINE))
    assert listed == TARGETS
    assert set(TARGETS) == declared == rules, json.dumps(
        {"without help": sorted(rules - set(TARGETS)), "not phony": sorted(rules - declared)}
    )
