"""Fixtures shared by every tier.

The synthesized cloud assembly is built once per session (and reused across sessions while
its inputs are unchanged, see simulator/synth.py); tiers read templates from it instead of
synthesizing again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.synth import synthesize


@pytest.fixture(scope="session")
def synthesized() -> Callable[[str], Path]:
    """`synthesized(stage)` -> the cloud assembly directory of that stage, synthesized once."""
    return synthesize


@pytest.fixture(scope="session")
def local_assembly() -> Path:
    """The `local` stage (API auth NONE), which the local cloud deploys."""
    return synthesize("local")


# `make test` runs one pytest-xdist worker per core (`--dist loadgroup`). The tiers that start
# local clouds (processes, ports, a core's worth of moto each) stay on one worker, one cloud at a
# time as when run alone; every other test goes to whichever worker is free.
_ONE_WORKER = ("localcloud", "e2e", "fuzz")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(Path(__file__).parent).parts[0] in _ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group("local-clouds"))
