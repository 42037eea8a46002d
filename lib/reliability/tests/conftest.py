"""Fixtures for the reliability layer's unit tests: moto-backed tables, telemetry, a fake clock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import constant_mutants
import pytest
from aws_lambda_powertools import Logger, Metrics
from moto import mock_aws

from reliability import FenceStore
from reliability.telemetry import Telemetry
from reliability_helpers import REGION, FakeClock, aws_client, create_tables, fence_store


def pytest_configure(config: pytest.Config) -> None:
    """Switch on the constant mutant scripts/constant_mutants.py names, if any (its module doc)."""
    name = os.environ.get(constant_mutants.ENV)
    if name:
        constant_mutants.apply(name)


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def ddb(aws: None) -> Any:
    client = aws_client("dynamodb")
    create_tables(client)
    return client


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry(
        logger=Logger(service="retrysafe-test"),
        metrics=Metrics(namespace="retrysafe-test", service="retrysafe-test"),
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fences(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> FenceStore:
    return fence_store(ddb, telemetry, clock, ttl_seconds=3600)
