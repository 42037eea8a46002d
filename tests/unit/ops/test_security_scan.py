"""ops.security_scan without checkov: its report read per stage, and what makes `make lint` fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ops import security_scan
from ops.security_scan import Finding, ScanError, StageScan


def _result(path: Path, check: str, comment: str | None = None) -> dict[str, Any]:
    return {
        "check_id": check,
        "check_name": f"Ensure {check}",
        "resource": "AWS::SQS::Queue.Orders",
        "file_abs_path": str(path),
        "check_result": {"result": "SKIPPED" if comment else "FAILED", "suppress_comment": comment},
    }


def test_the_report_is_counted_per_stage_by_template(tmp_path: Path) -> None:
    dev, prod = tmp_path / "dev" / "s-dev-data.template.json", tmp_path / "prod" / "s-prod-data.template.json"
    passed = [_result(dev, "CKV_AWS_1"), _result(prod, "CKV_AWS_1"), _result(prod, "CKV_AWS_2")]
    report = {
        "check_type": "cloudformation",
        "results": {
            "passed_checks": passed,
            "failed_checks": [_result(dev, "CKV_AWS_27")],
            "skipped_checks": [_result(prod, "CKV_AWS_27", "SQS-managed keys")],
            "parsing_errors": [str(prod)],
        },
    }
    scans = security_scan.tally(report, {dev.resolve(): "dev", prod.resolve(): "prod"})
    assert scans["dev"].passed == 1
    assert scans["dev"].failed == [
        Finding(
            check="CKV_AWS_27",
            name="Ensure CKV_AWS_27",
            resource="AWS::SQS::Queue.Orders",
            template="s-dev-data.template.json",
        )
    ]
    assert (scans["prod"].passed, scans["prod"].failed, scans["prod"].unparsed) == (
        2,
        [],
        ["s-prod-data.template.json"],
    )
    assert [f.reason for f in scans["prod"].acknowledged] == ["SQS-managed keys"]
    assert not scans["dev"].clean
    assert not scans["prod"].clean  # a template checkov could not read is no pass


def test_a_report_that_checked_no_cloudformation_is_an_error(tmp_path: Path) -> None:
    checkov = tmp_path / "checkov"
    # checkov's answer when nothing it was given held a resource: a summary, no results
    checkov.write_text('#!/bin/sh\necho \'{"passed": 0, "failed": 0, "skipped": 0, "parsing_errors": 0}\'\n')
    checkov.chmod(0o755)
    with pytest.raises(ScanError, match="checked no CloudFormation"):
        security_scan.run_checkov([tmp_path / "empty.template.json"], checkov=checkov)
    with pytest.raises(ScanError, match="missing"):
        security_scan.run_checkov([], checkov=tmp_path / "absent")


@pytest.mark.parametrize(("failed", "code"), [(0, 0), (1, 1)])
def test_lint_fails_on_any_unacknowledged_finding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], failed: int, code: int
) -> None:
    finding = Finding(check="CKV_AWS_117", name="VPC", resource="AWS::Lambda::Function.Api", template="t")
    scans = {
        "dev": StageScan(stage="dev", passed=3, acknowledged=[finding]),
        "prod": StageScan(stage="prod", passed=3, failed=[finding] * failed),
    }
    monkeypatch.setattr(security_scan, "scan", lambda stages: scans)
    assert security_scan.main([]) == code
    out = capsys.readouterr().out
    assert "dev: failed 0, passed 3, acknowledged 1" in out
    assert ("FAILED CKV_AWS_117 AWS::Lambda::Function.Api" in out) == bool(failed)
