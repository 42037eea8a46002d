"""Fixtures for the reliability layer's unit tests: moto-backed tables, queues, telemetry, a fake clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from aws_lambda_powertools import Logger, Metrics
from moto import mock_aws

from reliability.fence import FenceStore
from reliability.telemetry import Telemetry

REGION = "us-east-1"
FENCES = "retrysafe-test-fences"
IDEMPOTENCY = "retrysafe-test-idempotency"
LEDGER = "retrysafe-test-ledger"
INVENTORY = "retrysafe-test-inventory"


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def create_tables(ddb: Any) -> None:
    for name in (FENCES, IDEMPOTENCY):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    for name in (LEDGER, INVENTORY):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def ddb(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name=REGION)
    create_tables(client)
    return client


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry(
        logger=Logger(service="retrysafe-test"),
        metrics=Metrics(namespace="retrysafe-test", service="retrysafe-test"),
    )


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fences(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> FenceStore:
    return FenceStore(
        client=ddb, table_name=FENCES, ttl_seconds=3600, telemetry=telemetry, namespace="fence", clock=clock
    )


@dataclass
class Emitted:
    """EMF blobs and structured log lines captured from stdout."""

    metrics: list[dict[str, Any]]
    logs: list[dict[str, Any]]

    def metric_names(self) -> list[str]:
        names: list[str] = []
        for blob in self.metrics:
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                names.extend(m["Name"] for m in directive["Metrics"])
        return names

    def dimensions_of(self, name: str) -> list[dict[str, str]]:
        found = []
        for blob in self.metrics:
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                if any(m["Name"] == name for m in directive["Metrics"]):
                    dims = [d for group in directive["Dimensions"] for d in group]
                    found.append({d: blob[d] for d in dims})
        return found

    def decisions(self) -> list[dict[str, Any]]:
        return [line for line in self.logs if "decision" in line]


def read_emitted(text: str) -> Emitted:
    metrics, logs = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        blob = json.loads(line)
        (metrics if "_aws" in blob else logs).append(blob)
    return Emitted(metrics=metrics, logs=logs)


def ledger_put(entry_id: str, amount: int) -> dict[str, Any]:
    """An effect write: a ledger entry that must exist exactly once."""
    return {
        "Put": {
            "TableName": LEDGER,
            "Item": {"pk": {"S": f"ENTRY#{entry_id}"}, "sk": {"S": "ENTRY"}, "amount": {"N": str(amount)}},
        }
    }


def stock_decrement(sku: str, qty: int) -> dict[str, Any]:
    """An effect write with its own condition: stock must cover qty."""
    return {
        "Update": {
            "TableName": INVENTORY,
            "Key": {"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}},
            "UpdateExpression": "SET stock = stock - :q",
            "ConditionExpression": "stock >= :q",
            "ExpressionAttributeValues": {":q": {"N": str(qty)}},
        }
    }


def counter_add(name: str) -> dict[str, Any]:
    """An effect write that is not idempotent by itself: an increment."""
    return {
        "Update": {
            "TableName": LEDGER,
            "Key": {"pk": {"S": f"COUNTER#{name}"}, "sk": {"S": "COUNTER"}},
            "UpdateExpression": "ADD applied :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def counter_value(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=LEDGER, Key={"pk": {"S": f"COUNTER#{name}"}, "sk": {"S": "COUNTER"}}).get("Item")
    return int(item["applied"]["N"]) if item else 0
