"""The Lambda code asset: functions/ and the reliability library at its root, as /var/task has them;
its hash follows both trees and nothing else."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from infra import asset

pytestmark = pytest.mark.slow


def test_the_synthesized_asset_holds_the_functions_and_the_library(
    synthesized: Callable[[str], Path],
) -> None:
    # Given the dev stage's cloud assembly (one asset directory: every function runs the same code)
    [root] = [path for path in synthesized("dev").glob("asset.*") if path.is_dir()]
    # Then the library is importable at the root as `reliability`, beside the sample's package
    assert (root / "reliability" / "__init__.py").is_file()
    assert (root / "reliability" / "runs.py").read_bytes() == (asset.LIBRARY_DIR / "runs.py").read_bytes()
    assert (root / "orders" / "handlers" / "api.py").is_file()
    # And not the library's infrastructure half (the CDK app's; no function imports it)
    assert (asset.LIBRARY_DIR / "cdk" / "__init__.py").is_file()
    assert not (root / "reliability" / "cdk").exists()
    # And nothing that is not code ships (bytecode only when this Python is the runtime's)
    shipped = list(root.rglob("*"))
    unwanted = {".md"} if sys.version_info[:2] == asset.RUNTIME_PYTHON else {".md", ".pyc"}
    assert not [p for p in shipped if p.name == "tests" or p.suffix in unwanted]


def _bytecode(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.pyc")}


def test_the_asset_ships_bytecode_compiled_for_the_runtime_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given this Python taken for the runtime's
    monkeypatch.setattr(asset, "RUNTIME_PYTHON", sys.version_info[:2])
    # When the asset is staged
    root = asset.stage(tmp_path / "one")
    # Then every module has the bytecode the runtime looks for, never checked against its source
    # (flags 0b01: hash-based, unchecked; the task root is read-only and immutable)
    sources = list(root.rglob("*.py"))
    assert sources
    for source in sources:
        pyc = Path(importlib.util.cache_from_source(str(source)))
        assert pyc.read_bytes()[4:8] == (1).to_bytes(4, "little"), pyc
    # And the bytes follow the sources only: a second staging is identical (the asset hash is stable)
    assert _bytecode(asset.stage(tmp_path / "two")) == _bytecode(root)


def test_another_python_ships_no_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a runtime whose Python is not this one (its bytecode would be ignored there)
    monkeypatch.setattr(asset, "RUNTIME_PYTHON", (3, sys.version_info[1] + 1))
    # Then the asset holds sources only
    assert _bytecode(asset.stage(tmp_path / "asset")) == {}


def _asset_hash(outdir: Path) -> str:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "AssetProbe")
    lambda_.Function(
        stack,
        "Probe",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="orders.handlers.api.handler",
        code=asset.code(),
    )
    [path] = [p for p in Path(app.synth().directory).glob("asset.*") if p.is_dir()]
    return path.name


def test_the_asset_hash_is_stable_and_follows_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the library copied aside, so a test can change it
    library = tmp_path / "src" / "reliability"
    shutil.copytree(asset.LIBRARY_DIR, library, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(asset, "LIBRARY_DIR", library)
    # When the same trees are synthesized twice, Then the asset hash is the same
    first = _asset_hash(tmp_path / "one")
    assert _asset_hash(tmp_path / "two") == first
    # When only the library changes, Then so does the hash (a deploy ships the new code)
    (library / "keys.py").write_text((library / "keys.py").read_text() + "\n# changed\n")
    assert _asset_hash(tmp_path / "three") != first
