"""The cloud assembly as a whole: env-agnostic stacks, data before compute, tagged resources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.synth import stack_names, synthesize


@pytest.fixture(scope="module")
def assembly() -> Path:
    return synthesize("dev")


def test_two_stacks_the_app_depending_on_the_data(assembly: Path) -> None:
    manifest = json.loads((assembly / "manifest.json").read_text())["artifacts"]
    assert stack_names(assembly) == ["retrysafe-dev-app", "retrysafe-dev-data"]
    assert "retrysafe-dev-data" in manifest["retrysafe-dev-app"]["dependencies"]
    assert "retrysafe-dev-app" not in manifest["retrysafe-dev-data"].get("dependencies", [])


def test_stacks_are_environment_agnostic(assembly: Path) -> None:
    # Given the manifest and the templates of a synth that ran without credentials
    manifest = json.loads((assembly / "manifest.json").read_text())["artifacts"]
    for name in stack_names(assembly):
        # Then no account or region was baked in
        assert manifest[name]["environment"] == "aws://unknown-account/unknown-region"
        text = (assembly / f"{name}.template.json").read_text()
        assert "us-east-1" not in text
        assert "123456789012" not in text


def test_every_taggable_resource_carries_service_and_stage(assembly: Path) -> None:
    for name in stack_names(assembly):
        template = json.loads((assembly / f"{name}.template.json").read_text())
        for kind in ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Lambda::Function"):
            for resource in (r for r in template["Resources"].values() if r["Type"] == kind):
                tags = {t["Key"]: t["Value"] for t in resource["Properties"]["Tags"]}
                assert tags == {"service": "retrysafe", "stage": "dev"}
