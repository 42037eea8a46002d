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
