"""Every log group (functions, the state machine, API access logs): one retention, the stage's key
if it has one, and removed with the stack unless the stage retains its logs."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from reliability.cdk.key import acknowledge_aws_key

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


def log_group(
    scope: Construct, construct_id: str, *, name: str, retain: bool, key: kms.IKey | None
) -> logs.LogGroup:
    group = logs.LogGroup(
        scope,
        construct_id,
        log_group_name=name,
        retention=LOG_RETENTION,
        encryption_key=key,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
    if key is None:
        acknowledge_aws_key(group, "CKV_AWS_158", "CloudWatch Logs' own service-managed keys")
    return group
