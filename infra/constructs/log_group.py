"""Every log group of the app (functions, the state machine, API access logs): one retention, and
removed with the stack unless the stage retains its logs."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


def log_group(scope: Construct, construct_id: str, *, name: str, retain: bool) -> logs.LogGroup:
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=name,
        retention=LOG_RETENTION,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
