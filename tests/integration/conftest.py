"""Fixtures for the in-process chain (lab/src/simulator/cloud.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.cloud import InProcessCloud, running_cloud
from simulator.world import reusing

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


# Modules that build moto worlds of their own (one tests `reusing` itself).
_OWN_WORLDS = frozenset({"test_simulator_patches", "test_simulator_world", "test_simulator_express"})


@pytest.fixture(scope="module", autouse=True)
def _one_world_per_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module's clouds share one moto world (`simulator.world.reusing`), deployed at its first
    cloud and put back to the seeded state for each next one, as a fault search does: a deploy
    per test was most of this tier's time."""
    if request.module.__name__.rpartition(".")[2] in _OWN_WORLDS:
        yield
        return
    with reusing():
        yield


@pytest.fixture(scope="session")
def assembly(synthesized) -> Path:
    return synthesized(STAGE)


@pytest.fixture
def cloud(assembly: Path) -> Iterator[InProcessCloud]:
    with running_cloud(assembly) as deployed:
        yield deployed
