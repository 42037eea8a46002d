"""The Powertools layer for an emulator that has no AWS-managed layers: build it, publish it there.

    python -m ops.layer                              # for infra's runtime and architecture
    python -m ops.layer --python 3.11 --arch x86_64  # for an engine that runs functions in its own Python
    python -m ops.layer --publish                    # and publish it on the LocalStack target: its ARN
    make layer [TARGET=localstack] [LAYER_ARGS="--python 3.11 --arch x86_64"]

On AWS the functions attach the public Powertools layer (reliability.cdk.function). The layer
built here holds what the handlers import from it: requirements-layer.txt (Powertools with its
tracer extras, aws_xray_sdk and wrapt, and pydantic) and their dependencies at the versions
constraints.txt pins, from wheels built for the function's Python and architecture (pip's
`--platform`/`--python-version`/`--only-binary`), under `python/` as Lambda expects. What the Lambda
runtime itself provides (boto3, botocore and theirs) is left out, as the public layer does.
Everything but the ARN goes to stderr, so `export POWERTOOLS_LAYER_ARN=$(make layer TARGET=localstack)`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emulator import project
from ops.target import localstack
from reliability.cdk.function import ARCHITECTURE, RUNTIME

PROJECT_DIR = project.root()
REQUIREMENTS = PROJECT_DIR / "requirements-layer.txt"
CONSTRAINTS = PROJECT_DIR / "constraints.txt"
LAYER_DIR = PROJECT_DIR / ".cache" / "layer"
LAYER_NAME = "retrysafe-powertools"
# Distributions the Lambda Python runtime ships (boto3 and its dependencies): never in the layer.
RUNTIME_PROVIDED = frozenset(
    {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}
)
# Lambda's Python runtimes run on Amazon Linux 2023 (glibc 2.34). pip 23 does not widen a
# manylinux tag to the older ones, so each glibc version a wheel may be built for is named.
_GLIBC_MINORS = range(17, 35)
_PIP_ARCH = {"arm64": "aarch64", "x86_64": "x86_64"}


class LayerError(RuntimeError):
    """pip could not build the layer, or it could not be published."""


@dataclass(frozen=True)
class LayerSpec:
    """A layer for one Python version and one Lambda architecture."""

    python: str  # "3.14"
    arch: str  # Lambda's name: "arm64" or "x86_64"

    @classmethod
    def of_functions(cls) -> LayerSpec:
        """The runtime and architecture infra declares for every function."""
        return cls(python=RUNTIME.name.removeprefix("python"), arch=ARCHITECTURE.name)

    @property
    def runtime(self) -> str:
        return f"python{self.python}"

    @property
    def zip_path(self) -> Path:
        return LAYER_DIR / f"powertools-{self.runtime}-{self.arch}.zip"

    def pip_target_args(self) -> list[str]:
        """pip options that pick wheels for this Python and architecture, never the running one's."""
        if self.arch not in _PIP_ARCH:
            raise LayerError(f"unknown architecture {self.arch!r}: one of {', '.join(_PIP_ARCH)}")
        machine = _PIP_ARCH[self.arch]
        platforms = [
            f"manylinux2014_{machine}",
            *(f"manylinux_2_{minor}_{machine}" for minor in _GLIBC_MINORS),
        ]
        return [
            *(arg for platform in platforms for arg in ("--platform", platform)),
            "--python-version",
            self.python,
            "--implementation",
            "cp",
            "--only-binary=:all:",
        ]


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _pip(args: Sequence[str]) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    result = subprocess.run(command, stdout=sys.stderr, check=False)  # noqa: S603 - our own pip
    if result.returncode != 0:
        raise LayerError(f"pip failed ({result.returncode}): {' '.join(command)}")


def resolve(spec: LayerSpec, workdir: Path) -> list[str]:
    """`name==version` of every distribution the layer holds (pip resolves, the runtime's left out)."""
    report = workdir / "report.json"
    _pip(
        [
            "install",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            "--target",
            str(workdir / "dry-run"),
            *spec.pip_target_args(),
            "-r",
            str(REQUIREMENTS),
            "-c",
            str(CONSTRAINTS),
        ]
    )
    installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    return sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in installs
        if _normalized(item["metadata"]["name"]) not in RUNTIME_PROVIDED
    )


def build(spec: LayerSpec) -> Path:
    """Write the layer zip for `spec` (see the module docstring); returns its path."""
    with tempfile.TemporaryDirectory(prefix="layer-") as temp:
        workdir = Path(temp)
        pins = resolve(spec, workdir)
        print(f"layer for {spec.runtime} {spec.arch}: {', '.join(pins)}", file=sys.stderr)
        site = workdir / "python"
        _pip(["install", "--no-deps", "--no-compile", "--target", str(site), *spec.pip_target_args(), *pins])
        spec.zip_path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(spec.zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(site.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(workdir).as_posix())
    print(f"wrote {spec.zip_path}", file=sys.stderr)
    return spec.zip_path


def publish(spec: LayerSpec, zip_path: Path, lambda_client: Any) -> str:
    """Publish the zip as a new version of the project's layer; returns its version ARN."""
    response = lambda_client.publish_layer_version(
        LayerName=LAYER_NAME,
        Description=f"Powertools (tracer extras) and pydantic for {spec.runtime} {spec.arch}",
        Content={"ZipFile": zip_path.read_bytes()},
        CompatibleRuntimes=[spec.runtime],
        CompatibleArchitectures=[spec.arch],
    )
    return str(response["LayerVersionArn"])


def main(argv: Sequence[str] | None = None) -> int:
    default = LayerSpec.of_functions()
    parser = argparse.ArgumentParser(prog="python -m ops.layer", description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default.python, help=f"Python version (default {default.python})")
    parser.add_argument(
        "--arch", default=default.arch, choices=sorted(_PIP_ARCH), help=f"default {default.arch}"
    )
    parser.add_argument(
        "--publish", action="store_true", help="publish on the LocalStack target, print the ARN"
    )
    args = parser.parse_args(argv)
    spec = LayerSpec(python=args.python, arch=args.arch)
    try:
        path = build(spec)
        if args.publish:
            emulator = localstack()
            try:
                print(publish(spec, path, emulator.client("lambda")))
            except (BotoCoreError, ClientError) as exc:
                raise LayerError(f"cannot publish the layer on {emulator.endpoint}: {exc}") from exc
    except LayerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
