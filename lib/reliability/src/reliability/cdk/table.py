"""A DynamoDB table the way every table of a service is built, and the shape of the record tables.

The record tables hold what the runtime half writes: step fences and consumer dedup records
(reliability.runs, reliability.dedup) and HTTP idempotency records (Powertools'
DynamoDBPersistenceLayer, reliability.http). Both key an item by `id` (S) and expire it by
`expiration` (epoch seconds); tests/cdk/test_tables.py checks the runtime's items against these.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from reliability.cdk.key import acknowledge_aws_key
from reliability.record import RECORD_KEY, RECORD_TTL_ATTRIBUTE

# The record tables' key and TTL attribute: the runtime half's (reliability.record), re-exported.
__all__ = ["RECORD_KEY", "RECORD_TTL_ATTRIBUTE", "ServiceTable"]


class ServiceTable(Construct):
    """On-demand, point-in-time recovery, optional TTL attribute; encrypted with the stage's `key`,
    or with DynamoDB's AWS-managed key when the stage has none.

    `retain` keeps the table (RETAIN + deletion protection) when its stack is deleted.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table_name: str,
        partition_key: str,
        sort_key: str | None = None,
        ttl_attribute: str | None = None,
        retain: bool,
        key: kms.IKey | None,
    ) -> None:
        super().__init__(scope, construct_id)
        encryption = (
            dynamodb.TableEncryption.AWS_MANAGED if key is None else dynamodb.TableEncryption.CUSTOMER_MANAGED
        )
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=table_name,
            partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=sort_key, type=dynamodb.AttributeType.STRING)
            if sort_key
            else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=encryption,
            encryption_key=key,
            time_to_live_attribute=ttl_attribute,
            deletion_protection=retain,
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        if key is None:
            acknowledge_aws_key(self.table, "CKV_AWS_119", "DynamoDB's AWS-managed key (aws/dynamodb)")
