"""`make lint`'s import layers: import-linter's contracts (`[tool.importlinter]` in pyproject.toml)
on the project's import path.

`python -m ops.layers` is `lint-imports` with pytest's `pythonpath` from pyproject.toml put first,
so the check finds the service's packages under functions/ and this tree's library whether or not
the caller set PYTHONPATH as the Makefile does (a pre-commit hook, a bare shell).
"""

from __future__ import annotations

import sys
import tomllib

from importlinter.cli import lint_imports

from emulator import project

ROOT = project.root()


def main() -> int:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    paths = [str(ROOT / entry) for entry in settings["tool"]["pytest"]["ini_options"]["pythonpath"]]
    sys.path[:0] = paths
    return lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_logo=True)


if __name__ == "__main__":
    sys.exit(main())
