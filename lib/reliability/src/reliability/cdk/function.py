"""A Lambda function of a service: its role, log group, tracing and alarms."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from reliability.cdk.key import acknowledge_aws_key
from reliability.cdk.log_group import log_group
from reliability.cdk.nag import acknowledge, acknowledge_checkov

# A service's runtime and architecture unless it chooses others: the newest Python runtime that
# both this aws-cdk-lib and the AWS-managed Powertools layer support (the layer is published for
# python3.10-3.14 under the SSM path below).
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# Public SSM parameter kept by the Powertools team in every commercial region; resolved by
# CloudFormation at deploy time, so the template stays region- and account-agnostic. It becomes a
# stack parameter whose default is this name: emulators without public parameters deploy the same
# template with that parameter overridden or answer the name themselves, so there is one template
# per stage whatever the target.
POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/arm64/python3.14/latest"

# Lambda's own log level names (the application log level filter of JSON logging).
_LAMBDA_LOG_LEVEL = {
    "DEBUG": lambda_.ApplicationLogLevel.DEBUG,
    "INFO": lambda_.ApplicationLogLevel.INFO,
    "WARNING": lambda_.ApplicationLogLevel.WARN,
    "ERROR": lambda_.ApplicationLogLevel.ERROR,
}


class ServiceFunction(Construct):
    """`function` with a role that has no managed policy, a retained-or-not log group, JSON logs,
    active tracing, its environment encrypted with the stage's `key` (if any), and two alarms
    (any error, any throttle). The runtime and architecture are the service's (they pick its
    Powertools layer); `timeout` is required: a fenced step's is its lease."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function_name: str,
        handler: str,
        timeout: Duration,
        memory_mb: int,
        description: str,
        runtime: lambda_.Runtime,
        architecture: lambda_.Architecture,
        code: lambda_.Code,
        layers: list[lambda_.ILayerVersion],
        environment: Mapping[str, str],
        log_level: str,
        retain_logs: bool,
        key: kms.IKey | None,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = log_group(
            self, "Logs", name=f"/aws/lambda/{function_name}", retain=retain_logs, key=key
        )
        # A role of our own instead of the default one, which carries the managed
        # AWSLambdaBasicExecutionRole (logs:* on every log group in the account).
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of {function_name}",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description=description,
            runtime=runtime,
            architecture=architecture,
            handler=handler,
            code=code,
            layers=layers,
            memory_size=memory_mb,
            timeout=timeout,
            reserved_concurrent_executions=reserved_concurrency,
            role=self.role,
            environment=dict(environment),
            environment_encryption=key,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=_LAMBDA_LOG_LEVEL[log_level],
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            log_group=self.log_group,
        )
        if key is not None:
            # Lambda decrypts the environment through a grant it makes for this role at deploy
            # time; the role's own permission keeps working if that grant is ever lost.
            key.grant_decrypt(self.role)
            # Every later grant on an encrypted table or queue adds the key's actions here too.
            key_policy = self.role.node.find_child("DefaultPolicy")
            for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*"):
                acknowledge(
                    key_policy,
                    f"IAM5[Action::{action}]",
                    f"{action} on the stage's one KMS key only: the data key and re-encrypt calls "
                    "that DynamoDB and SQS make with the caller's permission on an encrypted table "
                    "or queue (CDK's table and queue grants).",
                )
        else:
            acknowledge_aws_key(self.function, "CKV_AWS_173", "Lambda's AWS-managed key (aws/lambda)")
        acknowledge_checkov(
            self.function,
            "CKV_AWS_117",
            "No VPC: the function calls only AWS service APIs (DynamoDB, SQS, Step Functions) over "
            "TLS with SigV4 and reaches no private network resource; a VPC would add NAT gateways "
            "or interface endpoints to run and pay for, and nothing to protect.",
        )
        # Active tracing adds its statement as a separate inline policy of the function.
        tracing_policy = self.function.node.try_find_child("inlinePolicyAddedToExecutionRole-0")
        if tracing_policy is not None:
            acknowledge(
                tracing_policy,
                "IAM5[Resource::*]",
                "xray:PutTraceSegments and xray:PutTelemetryRecords (active tracing) support no "
                "resource-level permissions; every data grant of this role names its table or queue ARN.",
            )
        self.errors_alarm = self._alarm(
            "Errors", function_name, "errors", self.function.metric_errors(period=Duration.minutes(1))
        )
        self.throttles_alarm = self._alarm(
            "Throttles",
            function_name,
            "throttles",
            self.function.metric_throttles(period=Duration.minutes(1)),
        )

    def _alarm(
        self, construct_id: str, function_name: str, what: str, metric: cloudwatch.IMetric
    ) -> cloudwatch.Alarm:
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=f"{function_name}-{what}",
            alarm_description=f"{function_name} reported {what}.",
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
