"""Fixtures shared by every tier.

The synthesized cloud assembly is built once per session (and reused across sessions while
its inputs are unchanged, see lab/src/emulator/synth.py); tiers read templates from it instead of
synthesizing again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from botocore.loaders import create_loader

from emulator.synth import synthesize


@pytest.fixture(scope="session", autouse=True)
def _one_botocore_loader() -> Iterator[None]:
    """Every botocore session of the run shares one loader of the service models. moto gives each
    mock a fresh boto3 default session, whose new loader would parse each model's JSON again (~120
    ms for DynamoDB's, most of a moto unit test's setup); the models are the same files throughout."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", cache(create_loader))
        yield


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
    here = Path(__file__).parent
    for item in items:
        # The session also collects the library's tests (lib/reliability/tests): none start a cloud.
        if item.path.is_relative_to(here) and item.path.relative_to(here).parts[0] in _ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group("local-clouds"))
