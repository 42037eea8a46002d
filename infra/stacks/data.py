"""`{service}-{stage}-data`: every table and queue, and the stage's KMS key when it sets
`customer_managed_keys`. Retained and deletion-protected when the stage says `retain_data`, so
the compute stack can be destroyed and redeployed freely."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.capacity import BATCH_WINDOW_SECONDS, MAX_RECEIVE_COUNT
from infra.config import DLQ_RETENTION_DAYS, QUEUE_RETENTION_DAYS, StageConfig
from infra.sizing import QUEUE_CONSUMERS, functions_for, pascal
from reliability.cdk.key import stage_key
from reliability.cdk.queue import QueueWithDlq
from reliability.cdk.table import RECORD_KEY, RECORD_TTL_ATTRIBUTE, ServiceTable


@dataclass(frozen=True, kw_only=True)
class TableSpec:
    suffix: str  # physical name suffix
    output: str  # stack output key
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None


# Keyed by the short name the app stack grants on.
TABLES: dict[str, TableSpec] = {
    # The record tables, shaped as the library writes them: HTTP idempotency and consumer dedup
    # records, and the step fences.
    "idempotency": TableSpec(
        suffix="idempotency",
        output="IdempotencyTableName",
        partition_key=RECORD_KEY,
        ttl_attribute=RECORD_TTL_ATTRIBUTE,
    ),
    "fences": TableSpec(
        suffix="fences", output="FenceTableName", partition_key=RECORD_KEY, ttl_attribute=RECORD_TTL_ATTRIBUTE
    ),
    "orders": TableSpec(suffix="orders", output="OrdersTableName", partition_key="pk", sort_key="sk"),
    "inventory": TableSpec(
        suffix="inventory", output="InventoryTableName", partition_key="pk", sort_key="sk"
    ),
    "payments": TableSpec(suffix="payments", output="PaymentsTableName", partition_key="pk", sort_key="sk"),
    "ledger": TableSpec(suffix="ledger", output="LedgerTableName", partition_key="pk", sort_key="sk"),
    "notifications": TableSpec(
        suffix="notifications", output="NotificationsTableName", partition_key="pk", sort_key="sk"
    ),
    "aggregates": TableSpec(
        suffix="daily-aggregates", output="AggregatesTableName", partition_key="pk", sort_key="sk"
    ),
}


class DataStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: StageConfig) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"{config.service} {config.stage}: tables and queues (stateful)",
        )
        # The app stack's log groups and functions use the same key.
        self.key: kms.IKey | None = (
            stage_key(
                self,
                "Key",
                name=config.name,
                description=(
                    f"{config.service} {config.stage}: tables, queues, log groups, Lambda environments"
                ),
                retain=config.retain_data,
            )
            if config.customer_managed_keys
            else None
        )
        self.tables: dict[str, dynamodb.ITable] = {}
        for key, spec in TABLES.items():
            table = ServiceTable(
                self,
                f"{pascal(key)}Table",
                table_name=config.name(spec.suffix),
                partition_key=spec.partition_key,
                sort_key=spec.sort_key,
                ttl_attribute=spec.ttl_attribute,
                retain=config.retain_data,
                key=self.key,
            ).table
            self.tables[key] = table
            CfnOutput(self, spec.output, value=table.table_name)

        # Keyed by queue name: "orders", "orders-dlq", "notify", ...
        self.queues: dict[str, sqs.IQueue] = {}
        functions = functions_for(config.workflow)
        for name, consumer in QUEUE_CONSUMERS.items():
            pair = QueueWithDlq(
                self,
                f"{pascal(name)}Queue",
                queue_name=config.name(name),
                consumer_timeout=functions[consumer].timeout,
                batch_window=Duration.seconds(BATCH_WINDOW_SECONDS),
                max_receive_count=MAX_RECEIVE_COUNT,
                retention=Duration.days(QUEUE_RETENTION_DAYS),
                dlq_retention=Duration.days(DLQ_RETENTION_DAYS),
                retain=config.retain_data,
                key=self.key,
            )
            self.queues[name] = pair.queue
            self.queues[f"{name}-dlq"] = pair.dlq
            CfnOutput(self, f"{pascal(name)}QueueUrl", value=pair.queue.queue_url)
            CfnOutput(self, f"{pascal(name)}DlqUrl", value=pair.dlq.queue_url)
