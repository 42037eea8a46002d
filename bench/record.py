"""What wrote a `bench/results` file: the command, recorded in the file itself."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence


def command(runs: str, argv: Sequence[str] | None = None) -> str:
    """The command line, from the project root, that wrote a result: `runs` is how the Makefile
    starts the script (`bench/cost.py`, `-m bench.roundtrips`), `argv` its arguments (default:
    this process's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(
        ["PYTHONPATH=functions:.:lib/reliability/src:lab/src", ".venv/bin/python", *runs.split(), *args]
    )


def written_by(runs: str, argv: Sequence[str] | None = None) -> str:
    """The Markdown paragraph that says which command wrote the file."""
    return f"Written by `{command(runs, argv)}` (`make bench` runs it with no arguments).\n\n"
