"""A standard SQS queue with its dead-letter queue and the alarm that watches the DLQ, and the
wiring of the function that consumes it.

The consumer reports partial batch failures (`ReportBatchItemFailures`): reliability.batch's
`process_batch` answers `batchItemFailures`, so only the failed records of a batch come back.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from reliability.cdk.key import acknowledge_aws_key
from reliability.cdk.windows import SQS_MAX_RETENTION_DAYS, visibility_timeout_seconds


class QueueWithDlq(Construct):
    """`queue` redrives to `dlq` after `max_receive_count` receives; `dlq_alarm` fires on any
    message. The visibility timeout follows the consumer's timeout and batching window
    (reliability.cdk.windows). Both are encrypted with the stage's `key`, or with SQS-managed keys
    when the stage has none."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue_name: str,
        consumer_timeout: Duration,
        max_receive_count: int,
        retention: Duration,
        retain: bool,
        key: kms.IKey | None,
        batch_window: Duration | None = None,
        dlq_retention: Duration | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        removal_policy = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        encryption = sqs.QueueEncryption.KMS if key is not None else sqs.QueueEncryption.SQS_MANAGED
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            queue_name=f"{queue_name}-dlq",
            retention_period=dlq_retention or Duration.days(SQS_MAX_RETENTION_DAYS),
            encryption=encryption,
            encryption_master_key=key,
            enforce_ssl=True,
            removal_policy=removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            visibility_timeout=Duration.seconds(
                visibility_timeout_seconds(
                    consumer_timeout.to_seconds(), batch_window.to_seconds() if batch_window else 0
                )
            ),
            retention_period=retention,
            encryption=encryption,
            encryption_master_key=key,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dlq),
            removal_policy=removal_policy,
        )
        if key is None:
            for queue in (self.queue, self.dlq):
                # CKV_AWS_27 recognises only KmsMasterKeyId, not SqsManagedSseEnabled.
                acknowledge_aws_key(queue, "CKV_AWS_27", "SQS-managed keys (SqsManagedSseEnabled)")
        self.dlq_alarm = cloudwatch.Alarm(
            self,
            "DlqNotEmpty",
            alarm_name=f"{queue_name}-dlq-not-empty",
            alarm_description=f"A message reached {queue_name}-dlq: inspect it, fix, then redrive.",
            metric=self.dlq.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )


def consume(
    function: lambda_.IFunction,
    queue: sqs.IQueue,
    *,
    batch_size: int,
    max_batching_window: Duration,
    max_concurrency: int | None = None,
) -> None:
    """`function` consumes `queue` through an event source mapping that reports partial batch
    failures: the records a handler built on reliability.batch answers in `batchItemFailures`
    return to the queue (and, after their receives, its DLQ); the rest of the batch is done."""
    function.add_event_source(
        event_sources.SqsEventSource(
            queue,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            max_concurrency=max_concurrency,
            report_batch_item_failures=True,
        )
    )
