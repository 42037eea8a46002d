"""A service's whole CDK assembly from its declaration: both stacks of one stage, tagged, with
cdk-nag attached.

    app = App()
    ServiceStacks(app, service=load_service(Path("functions/things/workflow.py")), openapi=document,
                  code_root=Path("functions"), handler_package="things.handlers")
    app.synth()

What a service writes: its declaration (`reliability.declaration.Service`), its OpenAPI document,
its stage values in `cdk.json` (`retrysafe.service`, `retrysafe.stages.<stage>` with its
`capacity`), and its handler modules under `handler_package` (`api`, `worker`, `sweep`, `steps`,
`consumers`). The rest derives: the functions and their grants, the tables and queues, the fenced
workflow, the capacity plan, the API, the dashboard and alarms.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Tags
from aws_cdk import aws_lambda as lambda_

from reliability.cdk import asset
from reliability.cdk.app_stack import ServiceAppStack
from reliability.cdk.capacity import CapacityPlan, plan, stage_capacity
from reliability.cdk.config import CONTEXT_KEY, StageConfig, load_config
from reliability.cdk.data_stack import ServiceDataStack
from reliability.cdk.declared import check
from reliability.cdk.function import ARCHITECTURE, POWERTOOLS_LAYER_PARAMETER, RUNTIME
from reliability.cdk.nag import add_nag_checks
from reliability.cdk.sizing import OWN_FUNCTIONS, functions_of, with_workflow
from reliability.declaration import Service

# The CDK feature flags these constructs are written for: a service's cdk.json context carries them
# (without them, e.g., active tracing's X-Ray statement lands in each role's default policy, where
# cdk-nag refuses its wildcard). ServiceStacks refuses an app whose context differs.
FEATURE_FLAGS: dict[str, Any] = {
    "@aws-cdk/aws-lambda:recognizeLayerVersion": True,
    "@aws-cdk/core:checkSecretUsage": True,
    "@aws-cdk/core:target-partitions": ["aws", "aws-cn"],
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/core:validateSnapshotRemovalPolicy": True,
    "@aws-cdk/aws-apigateway:disableCloudWatchRole": True,
    "@aws-cdk/core:enablePartitionLiterals": True,
    "@aws-cdk/aws-stepfunctions-tasks:useNewS3UriParametersForBedrockInvokeModelTask": True,
    "@aws-cdk/aws-lambda:createNewPoliciesWithAddToRolePolicy": True,
    "@aws-cdk/aws-sqs:sqsQueueEncryptionMasterKey": True,
    "@aws-cdk/core:explicitStackTags": True,
    "@aws-cdk/core:defaultCrossStackReferences": "strong",
}


def check_feature_flags(app: App) -> None:
    """Every flag of FEATURE_FLAGS is set as the constructs expect, or ValueError naming the rest."""
    wrong = {flag: value for flag, value in FEATURE_FLAGS.items() if app.node.try_get_context(flag) != value}
    if wrong:
        raise ValueError(f"the CDK context (cdk.json) lacks these feature flags: {wrong}")


class ServiceStacks:
    """`data` (`{service}-{stage}-data`) and `app` (`{service}-{stage}-app`) of one stage.

    `context`: the service's block of the CDK context (None: the app's `retrysafe` entry, from
    cdk.json); `stage`: the stage to build (None: the app's `stage` context, `-c stage=...`, else
    the default). `code_root`: the Lambda asset root, where the declaration's
    dotted paths and `handler_package` live (checked at synth); `code`: the asset, by default that
    tree with this library beside it. `own_limits`: the service's own downstream limits in runs a
    second (reliability.cdk.capacity.plan); `physical_names`: a declared table's name suffix when
    it is not its short name."""

    def __init__(
        self,
        app: App,
        *,
        service: Service,
        openapi: Mapping[str, Any],
        code_root: Path,
        handler_package: str,
        context: Mapping[str, Any] | None = None,
        stage: str | None = None,
        code: lambda_.Code | None = None,
        own_limits: Mapping[str, float] | None = None,
        physical_names: Mapping[str, str] | None = None,
        runtime: lambda_.Runtime = RUNTIME,
        architecture: lambda_.Architecture = ARCHITECTURE,
        powertools_layer_parameter: str = POWERTOOLS_LAYER_PARAMETER,
        declaration_source: str = "the service's declaration",
    ) -> None:
        check_feature_flags(app)
        check(service, code_root=code_root, reserved_functions=set(OWN_FUNCTIONS), source=declaration_source)
        if context is None:
            context = app.node.try_get_context(CONTEXT_KEY) or {}
        self.config: StageConfig = load_config(context, stage or app.node.try_get_context("stage"))
        config = self.config
        self.capacity: CapacityPlan = plan(
            service, stage_capacity(context, config.stage), config.workflow, own_limits=own_limits
        )
        functions = with_workflow(functions_of(service, handler_package), config.workflow)
        self.data = ServiceDataStack(
            app,
            config.data_stack_name,
            service=service,
            config=config,
            functions=functions,
            physical_names=physical_names,
        )
        self.app = ServiceAppStack(
            app,
            config.app_stack_name,
            service=service,
            config=config,
            data=self.data,
            capacity=self.capacity,
            functions=functions,
            code=code or asset.code(functions=code_root, python=asset.runtime_python(runtime)),
            openapi=openapi,
            runtime=runtime,
            architecture=architecture,
            powertools_layer_parameter=powertools_layer_parameter,
        )
        for stack in (self.data, self.app):
            Tags.of(stack).add("service", config.service)
            Tags.of(stack).add("stage", config.stage)
        add_nag_checks(app)
