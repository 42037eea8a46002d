"""A standard SQS queue with its dead-letter queue and the alarm that watches the DLQ."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

# The visibility timeout and the receives before the DLQ are derived in infra/capacity.py.
from infra.capacity import MAX_RECEIVE_COUNT, visibility_timeout_seconds
from infra.config import DLQ_RETENTION_DAYS, QUEUE_RETENTION_DAYS
from infra.constructs.key import acknowledge_aws_key

QUEUE_RETENTION = Duration.days(QUEUE_RETENTION_DAYS)
DLQ_RETENTION = Duration.days(DLQ_RETENTION_DAYS)


class QueueWithDlq(Construct):
    """`queue` redrives to `dlq` after MAX_RECEIVE_COUNT receives; `dlq_alarm` fires on any message.
    Both are encrypted with the stage's `key`, or with SQS-managed keys when the stage has none."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue_name: str,
        consumer_timeout: Duration,
        retain: bool,
        key: kms.IKey | None,
    ) -> None:
        super().__init__(scope, construct_id)
        removal_policy = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        encryption = sqs.QueueEncryption.KMS if key is not None else sqs.QueueEncryption.SQS_MANAGED
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            queue_name=f"{queue_name}-dlq",
            retention_period=DLQ_RETENTION,
            encryption=encryption,
            encryption_master_key=key,
            enforce_ssl=True,
            removal_policy=removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            visibility_timeout=Duration.seconds(visibility_timeout_seconds(consumer_timeout.to_seconds())),
            retention_period=QUEUE_RETENTION,
            encryption=encryption,
            encryption_master_key=key,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=MAX_RECEIVE_COUNT, queue=self.dlq),
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
