"""The stage's own KMS key, and what a resource says when its stage keeps AWS's keys instead.

One key per stage encrypts its tables, queues, log groups and Lambda environments. The key
policy keeps KMS's default statement (the account's IAM policies decide: every function's role
gets exactly the key actions of its table and queue grants, plus kms:Decrypt for its
environment) and adds CloudWatch Logs, which encrypts the stage's log groups with it.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, IConstruct

from reliability.cdk.nag import acknowledge_checkov


def stage_key(
    scope: Construct, construct_id: str, *, name: Callable[[str], str], description: str, retain: bool
) -> kms.Key:
    """The stage's key: rotated yearly, kept as long as the data it encrypts is kept (`retain`).

    `name(suffix)` is the stage's physical name of a resource (`{service}-{stage}-{suffix}`): the
    key's alias is `name("key")`, and CloudWatch Logs may use it for the log groups `name("*")`."""
    key = kms.Key(
        scope,
        construct_id,
        alias=f"alias/{name('key')}",
        description=description,
        enable_key_rotation=True,
        # A retained table or queue is unreadable without its key.
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
    stack = Stack.of(key)
    stage_log_groups = stack.format_arn(
        service="logs",
        resource="log-group",
        # /aws/lambda/<name>, /aws/vendedlogs/states/<name>, /aws/apigateway/<name>/access
        resource_name=f"/aws/*/{name('*')}",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchLogsEncryptsTheStagesLogGroups",
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            # The actions AWS's CloudWatch Logs guide gives this statement.
            actions=[
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            ],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": stage_log_groups}},
        )
    )
    return key


def acknowledge_aws_key(resource: IConstruct, check: str, encrypted_by: str) -> None:
    """`resource` is encrypted at rest by AWS's key (`encrypted_by`), as its stage chose."""
    acknowledge_checkov(
        resource,
        check,
        f"Encrypted at rest with {encrypted_by}. This stage keeps AWS's keys: no key of its own to "
        "pay for, rotate and administer; a stage with a key of its own (reliability.cdk.key."
        "stage_key) encrypts this with it.",
    )
