"""`make layer`: the Powertools layer an emulator needs, for the function's Python and architecture.

pip itself is replaced here (no registry in a unit test): these check what pip is asked for and
what is made of its answer. `make e2e-localstack` builds and attaches a real one.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from ops import layer
from reliability.cdk.function import ARCHITECTURE, RUNTIME


def _fake_pip(monkeypatch: pytest.MonkeyPatch, resolved: dict[str, str]) -> list[list[str]]:
    """pip that 'resolves' to `resolved` (name -> version) and 'installs' one module per pin."""
    calls: list[list[str]] = []

    def pip(args: Sequence[str]) -> None:
        args = list(args)
        calls.append(args)
        if "--dry-run" in args:
            report = Path(args[args.index("--report") + 1])
            installs = [{"metadata": {"name": n, "version": v}} for n, v in resolved.items()]
            report.write_text(json.dumps({"install": installs}))
            return
        site = Path(args[args.index("--target") + 1])
        for pin in args:
            if "==" in pin:
                name = pin.split("==")[0].lower().replace("-", "_")
                (site / name).mkdir(parents=True, exist_ok=True)
                (site / name / "__init__.py").write_text("")

    monkeypatch.setattr(layer, "_pip", pip)
    return calls


def test_the_default_layer_is_for_the_runtime_and_architecture_infra_declares() -> None:
    spec = layer.LayerSpec.of_functions()

    assert (spec.runtime, spec.arch) == (RUNTIME.name, ARCHITECTURE.name)
    args = spec.pip_target_args()
    assert args[args.index("--python-version") + 1] == spec.python
    assert "--only-binary=:all:" in args
    platforms = {args[i + 1] for i, arg in enumerate(args) if arg == "--platform"}
    assert "manylinux2014_aarch64" in platforms
    assert "manylinux_2_34_aarch64" in platforms  # Amazon Linux 2023's glibc
    assert not any("x86_64" in p for p in platforms)


def test_the_layer_holds_the_pinned_libraries_and_not_what_the_runtime_provides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given pip's resolution of requirements-layer.txt (botocore comes in through aws-xray-sdk)
    monkeypatch.setattr(layer, "LAYER_DIR", tmp_path)
    calls = _fake_pip(
        monkeypatch,
        {
            "aws_lambda_powertools": "3.37.0",
            "pydantic": "2.14.3",
            "botocore": "1.44.5",
            "python-dateutil": "2",
        },
    )
    spec = layer.LayerSpec(python="3.11", arch="x86_64")

    path = layer.build(spec)

    # Then pip resolved the requirement file with the project's constraints, for that platform
    dry_run, install = calls
    assert dry_run[dry_run.index("-r") + 1] == str(layer.REQUIREMENTS)
    assert dry_run[dry_run.index("-c") + 1] == str(layer.CONSTRAINTS)
    assert "manylinux2014_x86_64" in dry_run
    # and installed exactly the pins, boto3's family left to the Lambda runtime
    assert "--no-deps" in install
    assert [a for a in install if "==" in a] == ["aws_lambda_powertools==3.37.0", "pydantic==2.14.3"]
    # under python/, in a zip named for the runtime and architecture
    assert path == tmp_path / "powertools-python3.11-x86_64.zip"
    names = zipfile.ZipFile(path).namelist()
    assert sorted(names) == ["python/aws_lambda_powertools/__init__.py", "python/pydantic/__init__.py"]


def test_the_requirement_file_names_what_the_handlers_import_from_the_layer() -> None:
    lines = [
        line.split("==")[0]
        for line in layer.REQUIREMENTS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    assert lines == ["aws-lambda-powertools[tracer]", "pydantic"]
    # the venv that runs the tests has the same pins (requirements-dev.txt includes the file)
    assert "-r requirements-layer.txt" in (layer.PROJECT_DIR / "requirements-dev.txt").read_text()
