"""The pre-commit hooks run exactly `make lint`'s commands, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _lint_commands() -> list[str]:
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "no lint target in the Makefile"
    return [line.strip().replace("$(VENV)", ".venv") for line in recipe.group(1).splitlines()]


def _hooks() -> list[dict[str, Any]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def test_every_lint_command_is_a_local_hook_and_nothing_else_is() -> None:
    # Given make lint's commands and the hooks, each hook's command as pre-commit runs it: its
    # entry, plus the files it matched when it takes file names (the glob make lint spells)
    hooks = _hooks()
    as_run = set()
    for hook in hooks:
        if hook.get("pass_filenames", True):
            assert hook["files"] == r"^\.github/workflows/[^/]+\.yml$", hook["id"]
            as_run.add(f"{hook['entry']} .github/workflows/*.yml")
        else:
            as_run.add(hook["entry"])

    # Then they are the same commands, on the venv's pinned tools, downloading nothing
    assert as_run == set(_lint_commands())
    assert all(hook["language"] == "system" and hook["entry"].startswith(".venv/bin/") for hook in hooks)
    assert [
        repo["repo"] for repo in yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
    ] == ["local"]
