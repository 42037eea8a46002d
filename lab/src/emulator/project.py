"""The project the lab works on: a service's checkout (this repository's orders sample, or a
service generated from the template), found by its pyproject.toml's `[tool.retrysafe]` table.

`RETRYSAFE_PROJECT` names it; otherwise it is the nearest directory, from the working directory
up, whose pyproject.toml has that table (the Makefile runs every tool from the project's root).
Every path the lab reads or writes in a project (its cdk.json, functions/, events/, results/,
caches) starts here, never at the lab's own files, so an installed lab serves any project.

The table's settings:
- `service = "module:attribute"`: the service's declaration (`ops.service`);
- `app = "module:function"`: the function that builds one stage's stacks onto a CDK `App`
  (the project's app.py's `build(app)`), what the lab synthesizes (`emulator.synth`).
"""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

TABLE = "retrysafe"
ENVIRONMENT_VARIABLE = "RETRYSAFE_PROJECT"


class ProjectNotFound(LookupError):
    """No pyproject.toml with a `[tool.retrysafe]` table here or above (or where the variable says)."""


def _settings_of(directory: Path) -> dict[str, Any] | None:
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        return None
    table = tomllib.loads(pyproject.read_text()).get("tool", {}).get(TABLE)
    return table if isinstance(table, dict) else None


@cache
def root() -> Path:
    """The project's root directory (module doc)."""
    named = os.environ.get(ENVIRONMENT_VARIABLE)
    if named:
        directory = Path(named).resolve()
        if _settings_of(directory) is None:
            raise ProjectNotFound(
                f"{ENVIRONMENT_VARIABLE}={named}: no pyproject.toml with [tool.{TABLE}] there"
            )
        return directory
    here = Path.cwd().resolve()
    for directory in (here, *here.parents):
        if _settings_of(directory) is not None:
            return directory
    raise ProjectNotFound(
        f"no pyproject.toml with [tool.{TABLE}] in {here} or above: run the lab from a service's "
        f"checkout, or set {ENVIRONMENT_VARIABLE}"
    )


def settings() -> dict[str, Any]:
    """The project's `[tool.retrysafe]` table."""
    return _settings_of(root()) or {}


def setting(name: str) -> str:
    """One `module:attribute` setting of the table; ProjectNotFound names what to write."""
    value = settings().get(name)
    if not isinstance(value, str) or ":" not in value:
        raise ProjectNotFound(f'{root() / "pyproject.toml"}: set [tool.{TABLE}] {name} = "module:attribute"')
    return value


def results(tool: str) -> Path:
    """Where a tool of the lab records the project's figures (`results/<tool>/`): the project's
    own measurements, committed with it, never the lab's."""
    return root() / "results" / tool
