"""Templates of each stage, read from the session's cloud assembly; one Template per module."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from emulator.synth import synthesize_stages, templates
from reliability.cdk.nag import CHECKOV_METADATA

SERVICE = "retrysafe"
STAGES = ("dev", "prod", "local", "dev-express", "local-express")


@pytest.fixture(scope="session", autouse=True)
def _all_stages_in_one_synth() -> None:
    """These tests read every stage: synthesize the stale ones together, once."""
    synthesize_stages(STAGES)


def stack(stage: str, kind: str) -> dict[str, Any]:
    return templates(stage)[f"{SERVICE}-{stage}-{kind}"]


def checkov_skips(stage: str) -> dict[tuple[str, str], str]:
    """Every checkov acknowledgment of the stage: (check, `Type.LogicalId`) -> reason."""
    found: dict[tuple[str, str], str] = {}
    for template in templates(stage).values():
        assert CHECKOV_METADATA not in template.get("Metadata", {}), "a template-wide skip"
        for logical_id, resource in template["Resources"].items():
            metadata = resource.get("Metadata", {}).get(CHECKOV_METADATA)
            if metadata is None:
                continue
            assert set(metadata) == {"skip"}, (logical_id, metadata)
            for skip in metadata["skip"]:
                assert set(skip) == {"id", "comment"}, (logical_id, skip)
                key = (skip["id"], f"{resource['Type']}.{logical_id}")
                assert key not in found, f"{key} acknowledged twice"
                found[key] = skip["comment"]
    return found


@pytest.fixture(scope="module")
def dev_data() -> Template:
    return Template.from_json(stack("dev", "data"))


@pytest.fixture(scope="module")
def prod_data() -> Template:
    return Template.from_json(stack("prod", "data"))


@pytest.fixture(scope="module")
def dev_app() -> Template:
    return Template.from_json(stack("dev", "app"))


@pytest.fixture(scope="module")
def local_app() -> Template:
    return Template.from_json(stack("local", "app"))


@pytest.fixture(scope="module")
def dev_app_json() -> dict[str, Any]:
    return stack("dev", "app")


@pytest.fixture(scope="module")
def dev_data_json() -> dict[str, Any]:
    return stack("dev", "data")
