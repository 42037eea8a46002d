"""The package contract: liftable (no aws_cdk), no clients built at import, the public names exported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import reliability

ROOT = Path(__file__).resolve().parents[3]


def test_importing_builds_no_client_and_pulls_in_no_cdk() -> None:
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
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "functions",
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"},
    )
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
        "CrashPlan",
        "SimulatedCrash",
        "crash_point",
    ):
        assert name in reliability.__all__
        assert hasattr(reliability, name)
