"""Fixtures for the in-process chain (simulator/cloud.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.cloud import InProcessCloud, running_cloud

# The local stage: the one whose sample events (events/) carry matching ids and tokens.
STAGE = "local"


@pytest.fixture(autouse=True)
def _offline_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach a real account or a developer's endpoint from these tests."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "RETRYSAFE_CRASH_POINTS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def assembly(synthesized) -> Path:
    return synthesized(STAGE)


@pytest.fixture
def cloud(assembly: Path) -> Iterator[InProcessCloud]:
    with running_cloud(assembly) as deployed:
        yield deployed
