"""Helpers shared by the reliability tests: table names, effect writes, a fake clock, EMF capture."""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from botocore.exceptions import ReadTimeoutError
from moto.core.models import botocore_stubber

from reliability.runs import FenceStore
from reliability.telemetry import Telemetry

REGION = "us-east-1"


@functools.cache
def _session() -> boto3.session.Session:
    return boto3.session.Session(
        region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def aws_client(service: str) -> Any:
    """A fresh client of one session kept for the whole run: `boto3.client` under moto builds a new
    session each time and parses the service model again (~0.25 s, most of a test's setup). moto
    intercepts it as any other client while a mock is on."""
    return _session().client(service)


FENCES = "retrysafe-test-fences"
IDEMPOTENCY = "retrysafe-test-idempotency"
ENTRIES = "retrysafe-test-entries"
STOCK = "retrysafe-test-stock"


def create_tables(ddb: Any) -> None:
    for name in (FENCES, IDEMPOTENCY):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    for name in (ENTRIES, STOCK):
        ddb.create_table(
            TableName=name,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
    metrics: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        blob = json.loads(line)
        (metrics if "_aws" in blob else logs).append(blob)
    return Emitted(metrics=metrics, logs=logs)


def entry_put(entry_id: str, amount: int) -> dict[str, Any]:
    """An effect write: an entry that must exist exactly once."""
    return {
        "Put": {
            "TableName": ENTRIES,
            "Item": {"pk": {"S": f"ENTRY#{entry_id}"}, "sk": {"S": "ENTRY"}, "amount": {"N": str(amount)}},
        }
    }


def stock_decrement(item: str, qty: int) -> dict[str, Any]:
    """An effect write with its own condition: stock must cover qty."""
    return {
        "Update": {
            "TableName": STOCK,
            "Key": {"pk": {"S": f"ITEM#{item}"}, "sk": {"S": "STOCK"}},
            "UpdateExpression": "SET stock = stock - :q",
            "ConditionExpression": "stock >= :q",
            "ExpressionAttributeValues": {":q": {"N": str(qty)}},
        }
    }


def counter_add(name: str) -> dict[str, Any]:
    """An effect write that is not idempotent by itself: an increment."""
    return {
        "Update": {
            "TableName": ENTRIES,
            "Key": {"pk": {"S": f"COUNTER#{name}"}, "sk": {"S": "COUNTER"}},
            "UpdateExpression": "ADD applied :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def counter_value(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=ENTRIES, Key={"pk": {"S": f"COUNTER#{name}"}, "sk": {"S": "COUNTER"}}).get(
        "Item"
    )
    return int(item["applied"]["N"]) if item else 0


class CallCounter:
    """Counts AWS API calls made through a client (a botocore before-call hook)."""

    def __init__(self, client: Any) -> None:
        self.calls: list[str] = []
        client.meta.events.register("before-call", self._count, unique_id=f"call-counter-{id(self)}")

    def _count(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


def put_stock(ddb: Any, item: str, stock: int) -> None:
    ddb.put_item(
        TableName=STOCK,
        Item={"pk": {"S": f"ITEM#{item}"}, "sk": {"S": "STOCK"}, "stock": {"N": str(stock)}},
    )


def stock_of(ddb: Any, item: str) -> int:
    found = ddb.get_item(TableName=STOCK, Key={"pk": {"S": f"ITEM#{item}"}, "sk": {"S": "STOCK"}})["Item"]
    return int(found["stock"]["N"])


def fence_store(client: Any, telemetry: Telemetry, clock: Any, **settings: Any) -> FenceStore:
    """The tests' fence store: the fence table, namespace "fence", a 60 s TTL unless `settings`
    say otherwise (ttl_seconds, max_result_bytes, crash_plan, ...)."""
    return FenceStore(
        client=client,
        table_name=FENCES,
        telemetry=telemetry,
        clock=clock,
        **{"ttl_seconds": 60, "namespace": "fence", **settings},
    )


def make_telemetry(service: str = "retrysafe-test") -> Telemetry:
    """Telemetry whose Logger writes to the current (captured) stdout: a fresh logger name each time."""
    return Telemetry(
        logger=Logger(service=f"{service}-{uuid.uuid4().hex}"),
        metrics=Metrics(namespace="retrysafe", service=service),
    )


def lose_answer(client: Any, operation: str, attempt: int = 1) -> list[str]:
    """The `attempt`-th attempt of `operation` lands in moto but its answer is lost (a read
    timeout), so the SDK sends the call again, as botocore does on AWS; returns every attempt."""
    attempts: list[str] = []

    def before_send(event_name: str, request: Any, **_: Any) -> None:
        attempts.append(event_name)
        if len(attempts) == attempt:
            botocore_stubber(event_name, request)  # the write happens
            raise ReadTimeoutError(endpoint_url=request.url)

    service = client.meta.service_model.service_id.hyphenize()  # dynamodb, sfn, ...
    client.meta.events.register_first(f"before-send.{service}.{operation}", before_send)
    return attempts


def rest_event(
    method: str,
    path: str,
    *,
    headers: dict[str, list[str]],
    body: str | None = None,
    encoded: bool = False,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event; `headers` as its multiValueHeaders (the single-value
    `headers` keep each name's last value, as API Gateway's do)."""
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": {name: values[-1] for name, values in headers.items()},
        "multiValueHeaders": headers,
        "queryStringParameters": None,
        "pathParameters": None,
        "requestContext": {
            "domainName": "api.example.com",
            "stage": "dev",
            "requestId": "r-1",
            "identity": {},
            **(context or {}),
        },
        "body": body,
        "isBase64Encoded": encoded,
    }


def answer_headers(answer: dict[str, Any]) -> dict[str, str]:
    """A proxy answer's headers, single- and multi-value, one value each."""
    multi = {name: values[0] for name, values in (answer.get("multiValueHeaders") or {}).items()}
    return {**(answer.get("headers") or {}), **multi}
