"""What the template's tests share: a generated copy's own fast tier, run with this venv.

The copy is tested as generated (its Python is rendered from template/, which this repository's
ruff, mypy and pytest do not read): ruff on it with its own settings, its unit tests with this
checkout's reliability library on the path (no pip install: the copy's requirements name the
same library).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
LIBRARY = ROOT / "lib" / "reliability"
# How a copy made from this checkout reaches the library until it is published.
LIBRARY_REQUIREMENT = f"retrysafe-reliability[cdk] @ file://{LIBRARY}"
# Results of this repository and its lab: none of it belongs in a new service.
NOT_IN_A_COPY = (
    *("results", "chaos", "bench", "scale", "ops", "lib"),
    *("localcloud", "localstack_engine", "simulator"),
)


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`args` in `cwd`; the output is in the assertion message when it fails."""
    done = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, **env}, timeout=600
    )
    assert done.returncode == 0, f"{' '.join(args)} in {cwd}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=template test", "-c", "user.email=template-test@example.invalid"]
    return run(["git", *identity, *args], cwd).stdout.strip()


def synth_tier(copy: Path) -> subprocess.CompletedProcess[str]:
    """The copy's infra tier (both stages synthesized with cdk-nag), jsii's unpacked runtime
    shared with this checkout's (~185 MB, unpacked once)."""
    return run(
        ["make", "test-infra", f"PY={sys.executable}"],
        copy,
        PYTHONPATH=str(LIBRARY / "src"),
        PYTEST_ADDOPTS="-p no:xdist -q",
        JSII_RUNTIME_PACKAGE_CACHE_ROOT=str(ROOT / ".cache" / "jsii"),
    )


def fast_tier(copy: Path) -> subprocess.CompletedProcess[str]:
    """The copy's lint (ruff) and unit tests, with this venv and this checkout's library."""
    run([str(VENV_BIN / "ruff"), "check", "--quiet", "."], copy)
    run([str(VENV_BIN / "ruff"), "format", "--check", "--quiet", "."], copy)
    return run(
        ["make", "test-unit", f"PY={sys.executable}"],
        copy,
        PYTHONPATH=str(LIBRARY / "src"),
        PYTEST_ADDOPTS="-p no:xdist -q",
    )
