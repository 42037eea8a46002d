"""A service's Lambda code asset: its functions' tree with the reliability library beside it, as
/var/task has them.

The library is a package of its own, so the asset is assembled rather than pointed at:
`stage(output, functions=..., library=...)` copies the service's functions tree and the library's
package directory (without its `cdk` half) into one directory. `code(...)` hands that to CDK as
local bundling (no Docker: the copy runs in this process), hashed by its output, so a change to
either tree changes the asset and two synths of the same tree give the same hash.

Bytecode: Lambda's task root is read-only, so a function whose asset has no bytecode compiles its
own code on every cold start (~20-35 ms of CPU a handler). When this Python is the functions'
runtime's (`runtime_python`), `stage` compiles the asset with
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

# The package this module belongs to, as installed or on the path: its runtime half is what the
# asset ships (found by path: the CDK app imports no runtime code).
LIBRARY_DIR = Path(__file__).resolve().parents[1]
# Never shipped: bytecode, tool caches, tests and docs.
EXCLUDE = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", "tests", "*.md")
# The library's infrastructure half (`reliability.cdk`): the CDK app's, never imported at run time.
# Only this top-level folder of the library: a `cdk` folder under functions/ would still ship.
LIBRARY_ONLY_AT_SYNTH = ("cdk",)

# Where Lambda unpacks the asset (LAMBDA_TASK_ROOT): the source paths the bytecode names.
TASK_ROOT = "/var/task"
# Named only because BundlingOptions requires an image; the local bundler always succeeds, so it is
# never pulled.
_UNUSED_IMAGE = "local-bundling-only"


def runtime_python(runtime: lambda_.Runtime) -> tuple[int, ...]:
    """The functions' Python, (3, 14) from "python3.14": bytecode is shipped only when this is it."""
    return tuple(int(part) for part in runtime.name.removeprefix("python").split("."))


def stage(
    output: Path, *, functions: Path, library: Path = LIBRARY_DIR, python: tuple[int, ...] | None = None
) -> Path:
    """Copy the asset's contents (the `functions` tree, the `library` package beside it) into
    ``output`` (created if missing); returns it. `python` is the functions' runtime Python
    (`runtime_python`): bytecode too when this interpreter is it."""
    ignore = shutil.ignore_patterns(*EXCLUDE)

    def ignore_in_library(directory: str, names: list[str]) -> set[str]:
        at_top = Path(directory) == library
        return ignore(directory, names) | ({*LIBRARY_ONLY_AT_SYNTH} & set(names) if at_top else set())

    shutil.copytree(functions, output, ignore=ignore, dirs_exist_ok=True)
    shutil.copytree(library, output / library.name, ignore=ignore_in_library, dirs_exist_ok=True)
    if python is not None and sys.version_info[:2] == python:
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
    def __init__(self, functions: Path, library: Path, python: tuple[int, ...]) -> None:
        self._functions, self._library, self._python = functions, library, python

    def try_bundle(self, output_dir: str, *_args: Any, **_options: Any) -> bool:
        stage(Path(output_dir), functions=self._functions, library=self._library, python=self._python)
        return True


def code(*, functions: Path, python: tuple[int, ...], library: Path = LIBRARY_DIR) -> lambda_.Code:
    """The asset every function of a service runs: `functions` with `library` beside it, with
    bytecode when this interpreter is the runtime's `python`."""
    return lambda_.Code.from_asset(
        str(functions),
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(
            image=DockerImage.from_registry(_UNUSED_IMAGE), local=_StageLocally(functions, library, python)
        ),
    )
