"""The record tables' shape (reliability.cdk.table) is what the runtime half writes: a fence record
and an HTTP idempotency record are keyed by RECORD_KEY and expire by RECORD_TTL_ATTRIBUTE."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from moto import mock_aws

from reliability import AtomicEffect, FenceStore, StepId
from reliability.cdk.table import RECORD_KEY, RECORD_TTL_ATTRIBUTE, ServiceTable
from reliability.telemetry import Telemetry
from reliability_helpers import REGION, FakeClock

pytestmark = pytest.mark.slow


def _table_properties() -> dict[str, Any]:
    stack = Stack(App(), "Records")
    ServiceTable(
        stack,
        "Fences",
        table_name="records",
        partition_key=RECORD_KEY,
        ttl_attribute=RECORD_TTL_ATTRIBUTE,
        retain=False,
        key=None,
    )
    (table,) = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table").values()
    return dict(table["Properties"])


def test_a_fence_record_lands_in_the_synthesized_table_shape(telemetry: Telemetry) -> None:
    # Given a table created with the synthesized key schema
    properties = _table_properties()
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        client.create_table(
            TableName="records",
            KeySchema=properties["KeySchema"],
            AttributeDefinitions=properties["AttributeDefinitions"],
            BillingMode="PAY_PER_REQUEST",
        )
        fences = FenceStore(
            client=client,
            table_name="records",
            ttl_seconds=3600,
            telemetry=telemetry,
            namespace="fence",
            clock=FakeClock(),
        )
        # When a step runs through the fences
        fences.run_atomic(StepId(token="dev.b-1.r1", step="hold"), lambda: AtomicEffect({"held": True}, []))
        (item,) = client.scan(TableName="records")["Items"]
    # Then its record carries the key and the TTL attribute the table declares
    (key,) = properties["KeySchema"]
    assert key["AttributeName"] == RECORD_KEY in item
    assert int(item[RECORD_TTL_ATTRIBUTE]["N"]) == int(FakeClock().now) + 3600


def test_the_http_records_use_the_same_shape() -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    persistence = DynamoDBPersistenceLayer(table_name="records", boto3_client=client)
    assert (persistence.key_attr, persistence.expiry_attr) == (RECORD_KEY, RECORD_TTL_ATTRIBUTE)
