"""The quick, deterministic chaos subset `make test` runs (the large set is `make chaos`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.draw import Catalogue
from chaos.points import PointHit
from chaos.single import record


@pytest.fixture(scope="session")
def assembly(synthesized) -> Path:
    return synthesized("local")


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """The functions log every decision and moto every failed execution; the chaos runs make many."""
    from orders.observability import logger  # noqa: PLC0415

    moto = logging.getLogger("moto")
    levels = (logger.log_level, moto.level)
    logger.setLevel("CRITICAL")
    moto.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(levels[0])
    moto.setLevel(levels[1])


@pytest.fixture(scope="session")
def completed_points(assembly: Path) -> list[PointHit]:
    """The crash points a clean `completed` order reaches (a recording run)."""
    return record(assembly, "completed")


@pytest.fixture(scope="session")
def completed_catalogue(assembly: Path, completed_points: list[PointHit]) -> Catalogue:
    """What random schedules of `completed` orders are drawn from."""
    return Catalogue.of(assembly, {"completed": completed_points})
