"""Templates of each stage, read from the session's cloud assembly; one Template per module."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from simulator.synth import synthesize_stages, templates

SERVICE = "retrysafe"
STAGES = ("dev", "prod", "local")


@pytest.fixture(scope="session", autouse=True)
def _all_stages_in_one_synth() -> None:
    """These tests read every stage: synthesize the stale ones together, once."""
    synthesize_stages(STAGES)


def stack(stage: str, kind: str) -> dict[str, Any]:
    return templates(stage)[f"{SERVICE}-{stage}-{kind}"]


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
