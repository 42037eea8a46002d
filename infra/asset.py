"""The Lambda code asset: `functions/` with the reliability library beside it, as /var/task has them.

The library lives in its own project (lib/reliability, src layout), so the asset is assembled rather
than pointed at: `stage(output)` copies `functions/` and `lib/reliability/src/reliability` into one
directory. `code()` hands that to CDK as local bundling (no Docker: the copy runs in this process),
hashed by its output, so a change to either tree changes the asset and two synths of the same tree
give the same hash. Everything else that needs the asset as Lambda unpacks it (the cold-start bench)
calls `stage` too.

Bytecode: Lambda's task root is read-only, so a function whose asset has no bytecode compiles its
own code on every cold start (~20-35 ms of CPU a handler, bench/results/coldstart.notes.md). When
this Python is the functions' runtime's (`RUNTIME_PYTHON`), `stage` compiles the asset with
``--invalidation-mode unchecked-hash``: the files are never checked against their sources (the
asset is immutable; a timestamp check would depend on the mtimes the zip keeps), and the bytes
depend only on the sources, so the asset hash stays stable. Another Python's bytecode would be
ignored by the runtime (another magic number), so then the asset ships none, as before.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra.constructs.function import RUNTIME

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = ROOT / "functions"
LIBRARY_DIR = ROOT / "lib" / "reliability" / "src" / "reliability"
# Never shipped: bytecode, tool caches, tests and docs.
EXCLUDE = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", "tests", "*.md")
# The library's infrastructure half (`reliability.cdk`): the CDK app's, never imported at run time.
# Only this top-level folder of the library: a `cdk` folder under functions/ would still ship.
LIBRARY_ONLY_AT_SYNTH = ("cdk",)
# The functions' Python, (3, 14) from "python3.14": bytecode is shipped only when this is it.
RUNTIME_PYTHON = tuple(int(part) for part in RUNTIME.name.removeprefix("python").split("."))
# Where Lambda unpacks the asset (LAMBDA_TASK_ROOT): the source paths the bytecode names.
TASK_ROOT = "/var/task"
# Named only because BundlingOptions requires an image; the local bundler always succeeds, so it is
# never pulled.
_UNUSED_IMAGE = "local-bundling-only"


def stage(output: Path, tree: Path | None = None) -> Path:
    """Copy the asset's contents into ``output`` (created if missing); returns it. ``tree`` is
    another checkout of this repository to take them from (the cold-start bench's A/B)."""
    functions = FUNCTIONS_DIR if tree is None else tree / FUNCTIONS_DIR.relative_to(ROOT)
    library = LIBRARY_DIR if tree is None else tree / LIBRARY_DIR.relative_to(ROOT)
    ignore = shutil.ignore_patterns(*EXCLUDE)

    def ignore_in_library(directory: str, names: list[str]) -> set[str]:
        at_top = Path(directory) == library
        return ignore(directory, names) | ({*LIBRARY_ONLY_AT_SYNTH} & set(names) if at_top else set())

    shutil.copytree(functions, output, ignore=ignore, dirs_exist_ok=True)
    shutil.copytree(library, output / library.name, ignore=ignore_in_library, dirs_exist_ok=True)
    if sys.version_info[:2] == RUNTIME_PYTHON:
        compile_bytecode(output)
    return output


def compile_bytecode(output: Path) -> None:
    """Bytecode for every module of ``output``, beside it as the runtime looks for it, naming each
    source by its path on Lambda (`TASK_ROOT`, for tracebacks) rather than this build's temporary
    one. In a fresh interpreter: marshal's bytes can follow what else the process has loaded, and
    the asset hash must not."""
    mode = ["--invalidation-mode", "unchecked-hash", "-s", str(output), "-p", TASK_ROOT]
    subprocess.run(  # noqa: S603 - this interpreter, the standard library's compileall
        [sys.executable, "-m", "compileall", "-q", "-j", "1", *mode, str(output)],
        check=True,
        capture_output=True,
    )


@jsii.implements(ILocalBundling)
class _StageLocally:
    def try_bundle(self, output_dir: str, *_args: Any, **_options: Any) -> bool:
        stage(Path(output_dir))
        return True


def code() -> lambda_.Code:
    """The asset every function of the app stack runs."""
    return lambda_.Code.from_asset(
        str(FUNCTIONS_DIR),
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(image=DockerImage.from_registry(_UNUSED_IMAGE), local=_StageLocally()),
    )
