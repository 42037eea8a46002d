"""`{service}-{stage}-data`: every table and queue of a service's declaration, and the stage's KMS
key when it sets `customer_managed_keys`. Retained and deletion-protected when the stage says
`retain_data`, so the compute stack can be destroyed and redeployed freely."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from reliability.cdk.capacity import BATCH_WINDOW_SECONDS, MAX_RECEIVE_COUNT
from reliability.cdk.config import DLQ_RETENTION_DAYS, QUEUE_RETENTION_DAYS, StageConfig
from reliability.cdk.declared import IDEMPOTENCY, pascal
from reliability.cdk.key import stage_key
from reliability.cdk.queue import QueueWithDlq
from reliability.cdk.sizing import FunctionSizing, queue_consumers
from reliability.cdk.table import RECORD_KEY, RECORD_TTL_ATTRIBUTE, ServiceTable
from reliability.declaration import FENCES, Service


@dataclass(frozen=True, kw_only=True)
class TableSpec:
    suffix: str  # physical name suffix
    output: str  # stack output key
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None


def table_specs(service: Service, physical_names: Mapping[str, str] | None = None) -> dict[str, TableSpec]:
    """Every table, keyed by the short name the app stack grants on: the record tables, shaped as
    the library writes them (HTTP idempotency and consumer dedup records, the step fences), then
    the declared tables, keyed `pk` + `sk`. `physical_names` gives a declared table another name
    suffix than its short name (a deployed table keeps its name: a renamed one is a new, empty
    table)."""
    names = physical_names or {}
    if unknown := set(names) - service.tables:
        raise ValueError(f"physical names for undeclared tables {sorted(unknown)}")
    records = {
        IDEMPOTENCY: TableSpec(
            suffix=IDEMPOTENCY,
            output="IdempotencyTableName",
            partition_key=RECORD_KEY,
            ttl_attribute=RECORD_TTL_ATTRIBUTE,
        ),
        FENCES: TableSpec(
            suffix=FENCES,
            output="FenceTableName",
            partition_key=RECORD_KEY,
            ttl_attribute=RECORD_TTL_ATTRIBUTE,
        ),
    }
    declared = {
        table: TableSpec(
            suffix=names.get(table, table),
            output=f"{pascal(table)}TableName",
            partition_key="pk",
            sort_key="sk",
        )
        for table in sorted(service.tables)
    }
    return {**records, **declared}


class ServiceDataStack(Stack):
    """The tables (`tables`, by short name) and queues (`queues`: the worker's, each consumer's,
    and `<name>-dlq` for each) of `service`, each with a stack output; `key` is the stage's KMS
    key, if it has one. `functions` sizes each queue's visibility after its consumer's timeout."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: Service,
        config: StageConfig,
        functions: Mapping[str, FunctionSizing],
        physical_names: Mapping[str, str] | None = None,
    ) -> None:
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
        for short, spec in table_specs(service, physical_names).items():
            table = ServiceTable(
                self,
                f"{pascal(short)}Table",
                table_name=config.name(spec.suffix),
                partition_key=spec.partition_key,
                sort_key=spec.sort_key,
                ttl_attribute=spec.ttl_attribute,
                retain=config.retain_data,
                key=self.key,
            ).table
            self.tables[short] = table
            CfnOutput(self, spec.output, value=table.table_name)

        # Keyed by queue name: the worker's, `<name>-dlq`, each consumer's.
        self.queues: dict[str, sqs.IQueue] = {}
        for name, consumer in queue_consumers(service).items():
            pair = QueueWithDlq(
                self,
                f"{pascal(name)}Queue",
                queue_name=config.name(name),
                consumer_timeout=Duration.seconds(functions[consumer].timeout_seconds),
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
