"""checkov on every stage's synthesized templates: `make lint` fails on any finding that is
neither fixed nor acknowledged on its resource.

    python -m ops.security_scan [--stage dev ...] [--acknowledgments]

The stages are cdk.json's, synthesized through the synth cache the tests share
(`lab/src/emulator/synth.py`: reused while app, infra, functions and cdk.json are unchanged, so a
second run only pays for checkov). checkov reads each acknowledgment from its resource's
CloudFormation Metadata, written by `infra.nag.acknowledge_checkov` with its reason; this
command passes it no skip of its own, so nothing is skipped stage- or template-wide.

checkov runs from its own virtualenv, `.venv-checkov` (`make lint` builds it from
requirements-checkov.txt): its pins of boto3, packaging and networkx are older than this
project's, so it cannot share `.venv`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator import project
from emulator.synth import SynthError, cdk_context, stack_names, synthesize_stages
from reliability.cdk.config import CONTEXT_KEY

ROOT = project.root()
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
# Only the templates: the assembly's asset directory is a copy of functions/, not the stage.
# --skip-download: no call to Prisma Cloud (guidelines, severities); the checks ship in the wheel.
CHECKOV_ARGS = ("--framework", "cloudformation", "--skip-download", "--output", "json")
SCAN_TIMEOUT_SECONDS = 300


class ScanError(RuntimeError):
    """checkov could not run, or checked nothing."""


@dataclass(frozen=True, kw_only=True)
class Finding:
    check: str
    name: str
    resource: str  # `AWS::Type.LogicalId`
    template: str
    reason: str = ""  # the acknowledgment's comment, for a skipped check


@dataclass(kw_only=True)
class StageScan:
    stage: str
    passed: int = 0
    failed: list[Finding] = field(default_factory=list)
    acknowledged: list[Finding] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.failed and not self.unparsed

    def line(self) -> str:
        return (
            f"{self.stage}: failed {len(self.failed)}, passed {self.passed}, "
            f"acknowledged {len(self.acknowledged)}, unparsed templates {len(self.unparsed)}"
        )


def stages() -> list[str]:
    """Every stage cdk.json defines."""
    return list(cdk_context("dev")[CONTEXT_KEY]["stages"])


def templates(assemblies: Mapping[str, Path]) -> dict[Path, str]:
    """Each stack template of each stage's assembly, and its stage."""
    return {
        (assembly / f"{name}.template.json").resolve(): stage
        for stage, assembly in assemblies.items()
        for name in stack_names(assembly)
    }


def run_checkov(files: Sequence[Path], checkov: Path = CHECKOV) -> dict[str, Any]:
    """checkov's JSON report on `files` (one run for all: its start-up is most of its time)."""
    if not checkov.is_file():
        raise ScanError(f"{checkov} is missing: `make lint` builds it (requirements-checkov.txt)")
    proc = subprocess.run(  # noqa: S603 - the pinned checkov on the project's own templates
        [str(checkov), *CHECKOV_ARGS, *(arg for path in files for arg in ("--file", str(path)))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SCAN_TIMEOUT_SECONDS,
        check=False,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise ScanError(f"checkov exited {proc.returncode} without a report:\n{proc.stderr[-4000:]}") from e
    # One framework gives one report; a list would mean frameworks this command did not ask for.
    if not isinstance(report, dict) or report.get("check_type") != "cloudformation":
        raise ScanError(
            f"checkov checked no CloudFormation resource in {len(files)} templates: {report!r:.500}"
        )
    return report


def _finding(result: dict[str, Any], template: Path) -> Finding:
    return Finding(
        check=result["check_id"],
        name=result["check_name"],
        resource=result["resource"],
        template=template.name,
        reason=(result.get("check_result") or {}).get("suppress_comment") or "",
    )


def tally(report: Mapping[str, Any], files: Mapping[Path, str]) -> dict[str, StageScan]:
    """The report's results, per stage."""
    scans = {stage: StageScan(stage=stage) for stage in dict.fromkeys(files.values())}

    def stage_of(result: Mapping[str, Any]) -> tuple[StageScan, Path]:
        path = (ROOT / result["file_abs_path"]).resolve()
        return scans[files[path]], path

    results = report["results"]
    for result in results["passed_checks"]:
        stage_of(result)[0].passed += 1
    for result in results["failed_checks"]:
        scan, path = stage_of(result)
        scan.failed.append(_finding(result, path))
    for result in results["skipped_checks"]:
        scan, path = stage_of(result)
        scan.acknowledged.append(_finding(result, path))
    for error in results.get("parsing_errors", []):
        path = (ROOT / error).resolve()
        scans[files[path]].unparsed.append(path.name)
    return scans


def scan(stage_names: Sequence[str]) -> dict[str, StageScan]:
    """Synthesize (or reuse) each stage and run checkov once on all their templates."""
    files = templates(synthesize_stages(stage_names))
    return tally(run_checkov(list(files)), files)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", action="append", help="a stage to scan (default: every stage in cdk.json)")
    parser.add_argument(
        "--acknowledgments", action="store_true", help="also list every acknowledged check and its reason"
    )
    args = parser.parse_args(argv)
    try:
        scans = scan(args.stage or stages())
    except (SynthError, ScanError) as e:
        print(e, file=sys.stderr)
        return 1
    for result in scans.values():
        print(f"checkov (CloudFormation) {result.line()}")
        for finding in result.failed:
            print(f"  FAILED {finding.check} {finding.resource} ({finding.template}): {finding.name}")
        for template in result.unparsed:
            print(f"  UNPARSED {template}")
        if args.acknowledgments:
            for finding in result.acknowledged:
                print(f"  acknowledged {finding.check} {finding.resource}: {finding.reason}")
    if all(result.clean for result in scans.values()):
        return 0
    print(
        "Fix each finding, or acknowledge it on its resource with its reason: "
        "infra.nag.acknowledge_checkov(resource, check, reason).",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
