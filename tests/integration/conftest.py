"""Fixtures for the in-process chain (tests/integration/harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import InProcessCloud, running_cloud

# The local stage: the one whose sample events (events/) carry matching ids and tokens.
STAGE = "local"


@pytest.fixture(scope="session")
def assembly(synthesized) -> Path:
    return synthesized(STAGE)


@pytest.fixture
def cloud(assembly: Path) -> Iterator[InProcessCloud]:
    with running_cloud(assembly) as deployed:
        yield deployed
