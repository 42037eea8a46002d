"""The Lambda code asset: `functions/` with the reliability library beside it, as /var/task has them.

The library lives in its own project (lib/reliability, src layout), so the asset is assembled rather
than pointed at: `stage(output)` copies `functions/` and `lib/reliability/src/reliability` into one
directory. `code()` hands that to CDK as local bundling (no Docker: the copy runs in this process),
hashed by its output, so a change to either tree changes the asset and two synths of the same tree
give the same hash. Everything else that needs the asset as Lambda unpacks it (the cold-start bench)
calls `stage` too.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = ROOT / "functions"
LIBRARY_DIR = ROOT / "lib" / "reliability" / "src" / "reliability"
# Never shipped: bytecode, tool caches, tests and docs.
EXCLUDE = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", "tests", "*.md")
# Named only because BundlingOptions requires an image; the local bundler always succeeds, so it is
# never pulled.
_UNUSED_IMAGE = "local-bundling-only"


def stage(output: Path) -> Path:
    """Copy the asset's contents into ``output`` (created if missing); returns it."""
    ignore = shutil.ignore_patterns(*EXCLUDE)
    shutil.copytree(FUNCTIONS_DIR, output, ignore=ignore, dirs_exist_ok=True)
    shutil.copytree(LIBRARY_DIR, output / LIBRARY_DIR.name, ignore=ignore, dirs_exist_ok=True)
    return output


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
