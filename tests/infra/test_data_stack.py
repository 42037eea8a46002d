"""The data stack: tables and queues, and how they survive (or not) a stack deletion."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.capacity import MAX_RECEIVE_COUNT
from infra.config import DLQ_RETENTION_DAYS, SECONDS_PER_DAY
from infra.sizing import FUNCTIONS, QUEUE_CONSUMERS, pascal
from ops.service import service as declared_service
from ops.stack_outputs import data_stack_outputs
from orders import workflow
from reliability.cdk.windows import VISIBILITY_TIMEOUT_FACTOR

TABLES = {
    "idempotency": ("id", None, "expiration"),
    "fences": ("id", None, "expiration"),
    "orders": ("pk", "sk", None),
    "inventory": ("pk", "sk", None),
    "payments": ("pk", "sk", None),
    "ledger": ("pk", "sk", None),
    "notifications": ("pk", "sk", None),
    "daily-aggregates": ("pk", "sk", None),
}


def _by_name(template: Template, resource_type: str, name_prop: str) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"][name_prop]: {**r, "LogicalId": logical_id}
        for logical_id, r in template.find_resources(resource_type).items()
    }


@pytest.mark.parametrize(("suffix", "keys"), TABLES.items())
def test_each_table_is_on_demand_with_pitr_sse_and_its_keys(
    dev_data: Template, suffix: str, keys: tuple
) -> None:
    partition_key, sort_key, ttl = keys
    key_schema = [{"AttributeName": partition_key, "KeyType": "HASH"}]
    if sort_key:
        key_schema.append({"AttributeName": sort_key, "KeyType": "RANGE"})
    dev_data.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TableName": f"retrysafe-dev-{suffix}",
            "KeySchema": key_schema,
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": ttl, "Enabled": True} if ttl else Match.absent(),
        },
    )


def test_there_are_exactly_the_eight_tables(dev_data: Template) -> None:
    names = set(_by_name(dev_data, "AWS::DynamoDB::Table", "TableName"))
    assert names == {f"retrysafe-dev-{suffix}" for suffix in TABLES}


def test_dev_data_is_destroyable(dev_data: Template) -> None:
    for resource_type in ("AWS::DynamoDB::Table", "AWS::SQS::Queue"):
        for resource in dev_data.find_resources(resource_type).values():
            assert resource["DeletionPolicy"] == "Delete"
            assert resource["UpdateReplacePolicy"] == "Delete"
            assert not resource["Properties"].get("DeletionProtectionEnabled", False)


def test_prod_data_is_retained_and_deletion_protected(prod_data: Template) -> None:
    tables = prod_data.find_resources("AWS::DynamoDB::Table")
    assert len(tables) == len(TABLES)
    for resource in tables.values():
        assert resource["DeletionPolicy"] == "Retain"
        assert resource["UpdateReplacePolicy"] == "Retain"
        assert resource["Properties"]["DeletionProtectionEnabled"] is True
    for resource in prod_data.find_resources("AWS::SQS::Queue").values():
        assert resource["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize(("queue", "consumer"), QUEUE_CONSUMERS.items())
def test_each_queue_redrives_to_its_dlq_with_a_named_receive_count(
    dev_data: Template, queue: str, consumer: str
) -> None:
    queues = _by_name(dev_data, "AWS::SQS::Queue", "QueueName")
    main, dlq = queues[f"retrysafe-dev-{queue}"], queues[f"retrysafe-dev-{queue}-dlq"]
    assert main["Properties"]["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq["LogicalId"], "Arn"]},
        "maxReceiveCount": MAX_RECEIVE_COUNT,
    }
    # Visibility timeout = 6 x the consuming function's timeout.
    assert (
        main["Properties"]["VisibilityTimeout"]
        == VISIBILITY_TIMEOUT_FACTOR * FUNCTIONS[consumer].timeout_seconds
    )
    assert VISIBILITY_TIMEOUT_FACTOR >= 6
    assert dlq["Properties"]["MessageRetentionPeriod"] == DLQ_RETENTION_DAYS * SECONDS_PER_DAY == 1_209_600
    assert "RedrivePolicy" not in dlq["Properties"]
    for q in (main, dlq):
        assert q["Properties"]["SqsManagedSseEnabled"] is True


def test_every_queue_denies_requests_without_tls(dev_data: Template) -> None:
    queues = dev_data.find_resources("AWS::SQS::Queue")
    assert len(queues) == 6
    policies = dev_data.find_resources("AWS::SQS::QueuePolicy")
    covered = set()
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in statements
        )
        covered |= {q["Ref"] for q in policy["Properties"]["Queues"]}
    assert covered == set(queues)


def test_an_alarm_fires_on_any_message_in_each_dlq(dev_data: Template) -> None:
    alarms = dev_data.find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 3
    for queue in QUEUE_CONSUMERS:
        dev_data.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "AlarmName": f"retrysafe-dev-{queue}-dlq-not-empty",
                "MetricName": "ApproximateNumberOfMessagesVisible",
                "Namespace": "AWS/SQS",
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            },
        )


def test_outputs_are_the_contract(dev_data: Template) -> None:
    outputs = dev_data.find_outputs("*")
    # Every table and queue the declaration names (each consumer's queue and DLQ included), the
    # idempotency and fence tables, and nothing else
    expected = data_stack_outputs(declared_service())
    assert {f"{pascal(c.name)}{kind}Url" for c in workflow.CONSUMERS for kind in ("Queue", "Dlq")} <= expected
    assert {k for k in outputs if not k.startswith("ExportsOutput")} == expected
