"""The sample's Lambda code asset: `functions/` with this repository's reliability library beside
it, assembled by the library's asset builder (reliability.cdk.asset).

The library here is the checkout's own (lib/reliability/src), so a second worktree sharing one
venv still ships its own copy. Everything else that needs the asset as Lambda unpacks it (the
cold-start bench) calls `stage` too; ``tree`` is another checkout to take it from (its A/B).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_lambda as lambda_

from infra.constructs.function import RUNTIME
from reliability.cdk import asset as _library
from reliability.cdk.asset import EXCLUDE, LIBRARY_ONLY_AT_SYNTH, TASK_ROOT, compile_bytecode

__all__ = [
    "EXCLUDE",
    "FUNCTIONS_DIR",
    "LIBRARY_DIR",
    "LIBRARY_ONLY_AT_SYNTH",
    "ROOT",
    "RUNTIME_PYTHON",
    "TASK_ROOT",
    "code",
    "compile_bytecode",
    "stage",
]

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = ROOT / "functions"
LIBRARY_DIR = ROOT / "lib" / "reliability" / "src" / "reliability"
RUNTIME_PYTHON = _library.runtime_python(RUNTIME)


def stage(output: Path, tree: Path | None = None) -> Path:
    """Copy the asset's contents into ``output`` (created if missing); returns it."""
    functions = FUNCTIONS_DIR if tree is None else tree / FUNCTIONS_DIR.relative_to(ROOT)
    library = LIBRARY_DIR if tree is None else tree / LIBRARY_DIR.relative_to(ROOT)
    return _library.stage(output, functions=functions, library=library, python=RUNTIME_PYTHON)


def code() -> lambda_.Code:
    """The asset every function of the app stack runs."""
    return _library.code(functions=FUNCTIONS_DIR, library=LIBRARY_DIR, python=RUNTIME_PYTHON)
