"""`{service}-{stage}-app`: a service's functions, its fenced workflow, its API and the alarms.

The grants live here, and only here: each function gets exactly the tables and queues of its kind
(reliability.cdk.access, derived from the declaration), and the environment variable that names
each of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from reliability.cdk.access import access_of
from reliability.cdk.api import OpenApiRestApi
from reliability.cdk.capacity import (
    EXPRESS_EXECUTION_TIMEOUT_SECONDS,
    THROTTLE_BACKOFF_SCHEDULE,
    CapacityPlan,
)
from reliability.cdk.config import STRANDED_AFTER_MINUTES, SWEEP_EVERY_MINUTES, StageConfig, WorkflowType
from reliability.cdk.data_stack import ServiceDataStack
from reliability.cdk.declared import pascal, step_function
from reliability.cdk.function import ARCHITECTURE, POWERTOOLS_LAYER_PARAMETER, RUNTIME, ServiceFunction
from reliability.cdk.nag import acknowledge, acknowledge_checkov
from reliability.cdk.queue import consume
from reliability.cdk.service_dashboard import ServiceDashboard
from reliability.cdk.sizing import API, SWEEPER, WORKER, FunctionSizing, plural
from reliability.cdk.workflow import FencedWorkflow, StepSpec
from reliability.declaration import Service, queue_env, table_env


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """How a function is invoked, which answers two things checkov asks of every function: where
    a failed invocation goes (a Lambda DLQ only ever receives failed asynchronous invocations)
    and what bounds its concurrency when the capacity plan reserves none for it."""

    failures: str
    concurrency: str


_SYNCHRONOUS = "a Lambda DLQ only receives failed asynchronous invocations."
_POOL = "a reservation would only carve slots out of the account's shared pool."


def invocations(service: Service) -> dict[str, Invocation]:
    """How each kind of function is invoked: `api`, `queue`, `workflow`, `schedule`."""
    entity, queue = service.entity.name, service.queue
    return {
        "api": Invocation(
            failures="Invoked synchronously by API Gateway: a failure is the HTTP answer, and the client "
            f"retries with the same Idempotency-Key; {_SYNCHRONOUS}",
            concurrency="Bounded by the API stage's throttle (api_throttle in cdk.json); a reservation "
            "below it would turn Lambda throttles into 5xx answers, and the capacity plan reserves "
            "only where a cap protects a downstream limit.",
        ),
        "queue": Invocation(
            failures="Invoked synchronously by its SQS event source mapping: a failed message returns to "
            f"its queue and, after maxReceiveCount receives, to the queue's alarmed DLQ; {_SYNCHRONOUS}",
            concurrency="Bounded by its SQS event source mapping's MaximumConcurrency (the capacity "
            "plan); " + _POOL,
        ),
        "workflow": Invocation(
            failures=f"Invoked synchronously by the {entity} workflow (Step Functions): failures are "
            "retried or caught there, and an unhandled one fails the execution (alarmed) for a redrive "
            f"(Standard) or for the {queue} queue to run the {entity} again under the same token "
            f"(Express); {_SYNCHRONOUS}",
            concurrency=f"Bounded by the {plural(service)} the worker admits into the workflow (its "
            "reserved concurrency, the capacity plan); only a step that calls a rate-limited "
            "provider needs a reservation of its own.",
        ),
        "schedule": Invocation(
            failures="Invoked asynchronously by an EventBridge schedule whose event carries nothing: the "
            f"next run, {SWEEP_EVERY_MINUTES} minutes later, is the retry and finds the same "
            f"{plural(service)}; a failure trips the function's errors alarm.",
            concurrency=f"One invocation per schedule tick (every {SWEEP_EVERY_MINUTES} minutes); {_POOL}",
        ),
    }


def _invocation_kind(service: Service, function: str) -> str:
    if function == API:
        return "api"
    if function == WORKER or function in {c.name for c in service.consumers}:
        return "queue"
    if function in {step_function(step) for step in service.steps}:
        return "workflow"
    if function == SWEEPER:
        return "schedule"
    raise ValueError(f"how is {function} invoked?")


def _entry_env(service: Service, function: str) -> dict[str, str]:
    """Which entry of the declaration the function runs (its kind's one shared handler reads it)."""
    steps = {step_function(step): step.name for step in service.steps}
    if function in steps:
        return {"STEP_NAME": steps[function]}
    if function in {c.name for c in service.consumers}:
        return {"CONSUMER_NAME": function}
    return {}


def _failed_alarm_description(service: Service, config: StageConfig, state_machine_name: str) -> str:
    """What an operator reads when a workflow execution failed (the workflow's alarm)."""
    queue = service.queue
    after = (
        f"the {queue} queue runs it again under the same token, and a run that fails on every "
        f"receive ends in the {queue} DLQ with the execution's error"
        if config.workflow is WorkflowType.EXPRESS
        else "fix the cause, then redrive it"
    )
    return (
        f"An execution of {state_machine_name} failed on an unhandled error or its time "
        f"limit; {after} (declined {plural(service)} end in Succeed, not here)."
    )


def _no_cache_reason(service: Service) -> str:
    """Why the API stage has no cache: what its routes need of the function."""
    idempotent = " and ".join(r.name for r in service.routes if r.idempotent) or "write"
    reads = " and ".join(r.name for r in service.routes if r.method == "GET") or "read"
    return (
        f"No cache: every {idempotent} must reach the function (its idempotency lives in DynamoDB, "
        f"not at the edge), and {reads} reports {service.entity.name} progress live, which a cache "
        "would answer stale."
    )


class ServiceAppStack(Stack):
    """Every function of `functions` with its grants, environment and invocation; the fenced
    workflow of the declared steps; the worker's start grants; the sweeper's schedule; the
    dashboard; the API built from `openapi` (the published document)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: Service,
        config: StageConfig,
        data: ServiceDataStack,
        capacity: CapacityPlan,
        functions: Mapping[str, FunctionSizing],
        code: lambda_.Code,
        openapi: Mapping[str, Any],
        runtime: lambda_.Runtime = RUNTIME,
        architecture: lambda_.Architecture = ARCHITECTURE,
        powertools_layer_parameter: str = POWERTOOLS_LAYER_PARAMETER,
    ) -> None:
        entity = service.entity.name
        super().__init__(
            scope,
            construct_id,
            description=f"{config.service} {config.stage}: functions, {entity} workflow, API, alarms",
        )
        powertools = lambda_.LayerVersion.from_layer_version_arn(
            self,
            "PowertoolsLayer",
            ssm.StringParameter.value_for_string_parameter(self, powertools_layer_parameter),
        )
        common_env = {
            "SERVICE_NAME": config.service,
            "STAGE": config.stage,
            "POWERTOOLS_SERVICE_NAME": config.service,
            "POWERTOOLS_METRICS_NAMESPACE": config.service,
            "POWERTOOLS_LOG_LEVEL": config.log_level,
            "IDEMPOTENCY_TTL_SECONDS": str(config.idempotency_ttl_seconds),
            "FENCE_TTL_SECONDS": str(config.fence_ttl_seconds),
            "DEDUP_TTL_SECONDS": str(config.dedup_ttl_seconds),
            "PROVIDER_KEY_LIFETIME_SECONDS": str(config.provider_key_lifetime_seconds),
        }
        access_by_function = access_of(service)
        if access_by_function.keys() != functions.keys():
            raise ValueError(
                f"functions {sorted(functions)} are not the declaration's {sorted(access_by_function)}"
            )
        how = invocations(service)

        self.functions: dict[str, lambda_.Function] = {}
        for name, sizing in functions.items():
            access = access_by_function[name]
            env = dict(common_env)
            for table in (*access.read_write, *access.read):
                env[table_env(table)] = data.tables[table].table_name
            for queue in access.send:
                env[queue_env(queue)] = data.queues[queue].queue_url
            env.update(_entry_env(service, name))
            function = ServiceFunction(
                self,
                pascal(name),
                function_name=config.name(name),
                handler=sizing.handler,
                timeout=Duration.seconds(sizing.timeout_seconds),
                memory_mb=sizing.memory_mb,
                description=sizing.description,
                runtime=runtime,
                architecture=architecture,
                code=code,
                layers=[powertools],
                environment=env,
                log_level=config.log_level,
                retain_logs=config.retain_data,
                key=data.key,
                reserved_concurrency=capacity.reserved_concurrency.get(name),
            ).function
            invocation = how[_invocation_kind(service, name)]
            acknowledge_checkov(function, "CKV_AWS_116", invocation.failures)
            if name not in capacity.reserved_concurrency:
                acknowledge_checkov(function, "CKV_AWS_115", invocation.concurrency)
            for table in access.read_write:
                data.tables[table].grant_read_write_data(function)
            for table in access.read:
                data.tables[table].grant_read_data(function)
            for queue in access.send:
                data.queues[queue].grant_send_messages(function)
            if access.consume:
                consume(
                    function,
                    data.queues[access.consume],
                    batch_size=capacity.batch_size_of(name),
                    max_batching_window=Duration.seconds(capacity.batch_window_seconds),
                    max_concurrency=capacity.max_concurrency[name],
                )
            self.functions[name] = function
            CfnOutput(self, f"{pascal(name)}FunctionName", value=function.function_name)

        self.state_machine_name = config.name(f"{entity}-workflow")
        fn = self.functions
        workflow = FencedWorkflow(
            self,
            f"{pascal(entity)}Workflow",
            state_machine_name=self.state_machine_name,
            workflow_type=sfn.StateMachineType(config.workflow.value),
            express_timeout_seconds=EXPRESS_EXECUTION_TIMEOUT_SECONDS,
            failed_alarm_description=_failed_alarm_description(service, config, self.state_machine_name),
            retain_logs=config.retain_data,
            log_key=data.key,
            steps=[
                StepSpec(
                    name=step.name,
                    function=fn[step_function(step)],
                    next=service.next_of(step),
                    catch=dict(step.catch),
                )
                for step in service.steps
            ],
        )
        state_machine = workflow.state_machine
        worker = fn[WORKER]
        worker.add_environment("STATE_MACHINE_ARN", state_machine.state_machine_arn)
        worker.add_environment("THROTTLE_BACKOFF_SECONDS", ",".join(map(str, THROTTLE_BACKOFF_SCHEDULE)))
        worker.add_environment("WORKFLOW_TYPE", config.workflow.value)
        # The worker dead-letters an Express run that failed on its last receive with the
        # execution's error as the reason (SQS's own move to the DLQ would carry none).
        worker.add_environment("MAX_RECEIVE_COUNT", str(capacity.max_receive_count))
        if config.workflow is WorkflowType.EXPRESS:
            state_machine.grant_start_sync_execution(worker)
        else:
            self._grant_start_and_describe(entity, state_machine, worker)
        CfnOutput(self, "StateMachineArn", value=state_machine.state_machine_arn)
        sweeper = fn[SWEEPER]
        sweeper.add_environment("STRANDED_AFTER_SECONDS", str(STRANDED_AFTER_MINUTES * 60))
        events.Rule(
            self,
            f"{pascal(SWEEPER)}Schedule",
            rule_name=config.name(SWEEPER),
            description=f"Re-send the message of {plural(service)} stranded in ACCEPTED",
            schedule=events.Schedule.rate(Duration.minutes(SWEEP_EVERY_MINUTES)),
            # no retries: the next scheduled run is the retry, and it finds the same entities
            targets=[targets.LambdaFunction(sweeper, retry_attempts=0)],
        )
        ServiceDashboard(
            self,
            "Dashboard",
            service=service,
            dashboard_name=config.name("dashboard"),
            namespace=config.service,  # POWERTOOLS_METRICS_NAMESPACE
            service_name=config.service,  # POWERTOOLS_SERVICE_NAME
            sweeper_step=pascal(SWEEPER),  # the sweeper's metrics' step
            stranded_after_minutes=STRANDED_AFTER_MINUTES,
            state_machine=state_machine,
            queues=data.queues,
        )

        self.api = OpenApiRestApi(
            self,
            f"{pascal(service.name)}Api",
            document=openapi,
            api_name=config.name("api"),
            description=f"{config.service} {service.name} API",
            no_cache_reason=_no_cache_reason(service),
            stage_name=config.stage,
            handler=fn[API],
            auth=config.api_auth,
            throttle=config.api_throttle,
            retain_logs=config.retain_data,
            log_key=data.key,
        )
        CfnOutput(self, "ApiUrl", value=self.api.api.url)

    def _grant_start_and_describe(
        self, entity: str, state_machine: sfn.StateMachine, worker: lambda_.Function
    ) -> None:
        """Standard: StartExecution, and DescribeExecution for a start whose name exists."""
        state_machine.grant_start_execution(worker)
        # DescribeExecution takes an execution ARN; executions are named by the worker, so the
        # grant is every execution of this one state machine (the name is known at synth).
        executions = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        iam.Grant.add_to_principal(
            grantee=worker, actions=["states:DescribeExecution"], resource_arns=[executions]
        )
        worker_policy = worker.role.node.try_find_child("DefaultPolicy") if worker.role else None
        if worker_policy is not None:
            acknowledge(
                worker_policy,
                "IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                f"{self.state_machine_name}:*]",
                f"states:DescribeExecution on the executions of the {entity} workflow only; their names "
                "are chosen at run time, so the execution id must be a wildcard.",
            )
