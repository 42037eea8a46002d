"""cdk-nag AwsSolutions: every stage synthesizes with nothing unacknowledged, and every
acknowledgment names one resource and says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs

from emulator.synth import cdk_context, stack_names, synthesize
from infra.config import load_config
from reliability.cdk.nag import acknowledge, add_nag_checks
from tests.infra.conftest import STAGES


def _report(assembly: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((assembly / "validation-report.json").read_text())
    return report


@pytest.mark.parametrize("stage", STAGES)
def test_no_unacknowledged_findings(stage: str) -> None:
    # Given the stage's cloud assembly (synth itself fails on an unacknowledged finding)
    assembly = synthesize(stage)
    # Then the AwsSolutions report ran and found nothing left to fix
    (plugin,) = [p for p in _report(assembly)["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    assert plugin["suppressedViolations"], "the report should list what was acknowledged"


@pytest.mark.parametrize("stage", STAGES)
def test_every_acknowledgment_names_one_resource_with_a_reason(stage: str) -> None:
    assembly = synthesize(stage)
    stacks = set(stack_names(assembly))
    (plugin,) = [p for p in _report(assembly)["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    for finding in plugin["suppressedViolations"]:
        where = finding["acknowledgedAt"]
        # Never the app or a whole stack: the construct that owns the finding.
        assert where.count("/") >= 1, finding
        assert where not in stacks, finding
        assert len(finding["reason"]) >= 40, finding
        for construct in finding["violatingConstructs"]:
            assert construct["constructPath"].startswith(where + "/"), finding


def test_auth_none_is_acknowledged_only_on_the_local_stage() -> None:
    for stage in STAGES:
        (plugin,) = _report(synthesize(stage))["pluginReports"]
        rules = {f["ruleName"] for f in plugin["suppressedViolations"]}
        auth = load_config(cdk_context(stage)["retrysafe"], stage).api_auth
        assert ("AwsSolutions-APIG4" in rules) == (auth == "NONE"), stage


def test_an_unacknowledged_finding_fails_synthesis(tmp_path: Path) -> None:
    # Given an app with the same checks and two queues without DLQ or TLS policy,
    # one of them acknowledged through infra.nag.acknowledge
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bad")
    sqs.Queue(stack, "Unacknowledged")
    acknowledged = sqs.Queue(stack, "Acknowledged")
    for rule in ("SQS3", "SQS4"):
        acknowledge(acknowledged, rule, "a reason long enough to be read by a reviewer")
    add_nag_checks(app)
    # When it synthesizes, Then synthesis fails on the unacknowledged queue only
    with pytest.raises(RuntimeError, match="AwsSolutions-SQS3") as failure:
        app.synth()
    assert "Bad/Unacknowledged/Resource" in str(failure.value)
    assert "Bad/Acknowledged/Resource" not in str(failure.value)
