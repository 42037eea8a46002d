"""A standard SQS queue with its dead-letter queue and the alarm that watches the DLQ."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import DLQ_RETENTION_DAYS

# AWS's guidance for Lambda event sources: a visibility timeout of at least six times the
# function timeout, so a batch that is retried by the poller is not redelivered mid-flight.
VISIBILITY_TIMEOUT_FACTOR = 6
# Receives before a message moves to the DLQ: enough to ride out throttling and a few transient
# failures (each failed receive waits a full visibility timeout), few enough that a poison
# message surfaces within minutes.
MAX_RECEIVE_COUNT = 5
QUEUE_RETENTION = Duration.days(4)
DLQ_RETENTION = Duration.days(DLQ_RETENTION_DAYS)


class QueueWithDlq(Construct):
    """`queue` redrives to `dlq` after MAX_RECEIVE_COUNT receives; `dlq_alarm` fires on any message."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue_name: str,
        consumer_timeout: Duration,
        retain: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        removal_policy = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            queue_name=f"{queue_name}-dlq",
            retention_period=DLQ_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            visibility_timeout=Duration.seconds(consumer_timeout.to_seconds() * VISIBILITY_TIMEOUT_FACTOR),
            retention_period=QUEUE_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=MAX_RECEIVE_COUNT, queue=self.dlq),
            removal_policy=removal_policy,
        )
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
