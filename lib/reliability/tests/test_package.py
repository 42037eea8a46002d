"""The package contract: liftable (nothing of a service), the runtime half free of aws_cdk (only
`reliability.cdk`, the infrastructure half, imports it), no clients built at import, the public names
exported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import reliability

SRC = Path(__file__).resolve().parents[1] / "src"
# What the library may import besides the standard library: itself and its declared dependencies
# (pyproject.toml; boto3/botocore are the Lambda runtime's), and in `reliability.cdk` the `cdk` extra's.
ALLOWED_ROOTS = {"reliability", "aws_lambda_powertools", "botocore", "boto3"}
CDK_ROOTS = {"aws_cdk", "constructs", "cdk_nag", "jsii"}
CDK_PACKAGE = SRC / "reliability" / "cdk"


def _imported_roots(modules: list[Path]) -> set[str]:
    imported = set()
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    return imported


def _fresh_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter that sees only this library's source (nothing imported yet)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": str(SRC)},
    )


def test_the_library_imports_only_itself_its_dependencies_and_the_standard_library() -> None:
    everything = list((SRC / "reliability").rglob("*.py"))
    runtime = [module for module in everything if CDK_PACKAGE not in module.parents]
    # Under `make mutation` the code is mutmut's copy, which imports mutmut's trampolines.
    tooling = {"mutmut"} if "mutmut" in sys.modules else set()
    allowed = ALLOWED_ROOTS | tooling | set(sys.stdlib_module_names)
    assert _imported_roots(runtime) - allowed == set()
    assert _imported_roots(everything) - allowed - CDK_ROOTS == set()


def test_the_runtime_half_loads_no_cdk(tmp_path: Path) -> None:
    # Given every module of the package outside reliability.cdk (what a Lambda function imports),
    # and reliability.cdk.windows (pure Python: a capacity plan reads it without synthesizing)
    code = (
        "import importlib, pkgutil, sys, reliability\n"
        "names = [m.name for m in pkgutil.walk_packages(reliability.__path__, 'reliability.')\n"
        "         if not m.name.startswith('reliability.cdk')]\n"
        "for name in [*names, 'reliability.cdk.windows']: importlib.import_module(name)\n"
        f"cdk = sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(CDK_ROOTS)!r}))\n"
        "print(len(names), cdk)\n"
    )
    # When they are all imported
    result = _fresh_python(code, tmp_path)
    # Then none of them loads aws_cdk, constructs, cdk-nag or jsii
    assert result.returncode == 0, result.stderr
    count, cdk = result.stdout.split(" ", 1)
    assert int(count) >= 10
    assert cdk.strip() == "[]"


def test_importing_builds_no_client_and_pulls_in_no_cdk(tmp_path: Path) -> None:
    # Given boto3 that fails any client construction
    code = (
        "import sys, boto3, boto3.session\n"
        "def boom(*a, **k): raise AssertionError('client built at import time')\n"
        "boto3.client = boom; boto3.resource = boom\n"
        "boto3.session.Session.client = boom; boto3.session.Session.resource = boom\n"
        "import reliability, reliability.http, reliability.batch, reliability.runs\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "assert 'aws_cdk' not in roots, 'aws_cdk imported'\n"
        "assert 'orders' not in roots, 'orders imported'\n"
    )
    # When the whole package is imported, Then it succeeds
    result = _fresh_python(code, tmp_path)
    assert result.returncode == 0, result.stderr


def test_public_names_are_exported() -> None:
    for name in (
        "FenceStore",
        "StepId",
        "Outcome",
        "AtomicEffect",
        "Write",
        "HttpIdempotency",
        "HttpResponse",
        "derive_key",
        "execution_token",
        "Fact",
        "Key",
        "BusinessError",
        "FenceBusy",
        "TransientError",
        "StaleFence",
        "ResultTooLarge",
        "PoisonMessage",
        "DeadLetters",
        "ConsumerDedup",
        "process_batch",
        "Telemetry",
        "Decision",
        "FaultPlan",
        "crash_point",
    ):
        assert name in reliability.__all__
        assert hasattr(reliability, name)


def test_production_modules_load_no_test_seam(tmp_path: Path) -> None:
    # Given every module of the runtime half outside reliability.testing (what production imports)
    code = (
        "import importlib, pkgutil, sys, reliability\n"
        "names = [m.name for m in pkgutil.walk_packages(reliability.__path__, 'reliability.')\n"
        "         if not m.name.startswith(('reliability.testing', 'reliability.cdk'))]\n"
        "for name in names: importlib.import_module(name)\n"
        "seams = sorted(n for n, m in sys.modules.items() if n.startswith('reliability')\n"
        "               and (hasattr(m, 'SimulatedCrash') or hasattr(m, 'CrashPlan')))\n"
        "print(len(names), seams)\n"
    )
    # When they are all imported with no plan armed
    result = _fresh_python(code, tmp_path)
    # Then none of them is, or loads, a module that defines the crash or the plan
    assert result.returncode == 0, result.stderr
    count, seams = result.stdout.split(" ", 1)
    assert int(count) >= 10
    assert seams.strip() == "[]"


def test_a_name_the_package_does_not_export_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError) as missing:
        reliability.no_such_name  # noqa: B018 - the lookup is the test

    assert str(missing.value) == "module 'reliability' has no attribute 'no_such_name'"
    assert not hasattr(reliability, "SAGA_NAMESPACE")  # a module's constant, not an export
