"""`{service}-{stage}-app`: functions, the order workflow, the API and the alarms.

The grants live here, and only here: each function gets exactly the tables and queues of its
kind (the steps' and consumers' follow from their entries in functions/orders/workflow.py), and
the environment variable that names each of them; orders.config holds each kind's settings.
"""

from __future__ import annotations

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

from infra import asset, manifest
from infra.capacity import EXPRESS_EXECUTION_TIMEOUT_SECONDS, THROTTLE_BACKOFF_SCHEDULE, CapacityPlan
from infra.config import STRANDED_AFTER_MINUTES, SWEEP_EVERY_MINUTES, StageConfig, WorkflowType
from infra.constructs.api import OrdersApi
from infra.constructs.dashboard import ServiceDashboard
from infra.constructs.function import ARCHITECTURE, POWERTOOLS_LAYER_PARAMETER, RUNTIME
from infra.sizing import FUNCTIONS, QUEUE_CONSUMERS, functions_for, pascal
from infra.stacks.data import DataStack
from reliability.cdk.function import ServiceFunction
from reliability.cdk.nag import acknowledge, acknowledge_checkov
from reliability.cdk.queue import consume
from reliability.cdk.workflow import FencedWorkflow, StepSpec


@dataclass(frozen=True, kw_only=True)
class Access:
    """The data a function may touch: tables read/write, tables read-only, queues it sends to."""

    read_write: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    send: tuple[str, ...] = ()
    consume: str | None = None  # the queue that triggers it


def _step_access(step: Any) -> Access:
    """A fenced step writes the fence table and its ports: tables (the orders table only for a step
    that declares it), or every consumer's queue for the events port."""
    tables = tuple(p for p in step.ports if p != manifest.workflow().EVENTS)
    sends = tuple(c.name for c in manifest.consumers()) if manifest.workflow().EVENTS in step.ports else ()
    return Access(read_write=("fences", *tables), send=sends)


def _consumer_access(consumer: Any) -> Access:
    """Its dedup table and its tables; the orders table read-only, to verify each event against its
    order (functions/orders/consumers.py), unless the consumer writes it."""
    return Access(
        read_write=("idempotency", *consumer.tables),
        read=() if "orders" in consumer.tables else ("orders",),
        send=(f"{consumer.name}-dlq",),
        consume=consumer.name,
    )


ACCESS: dict[str, Access] = {
    "api": Access(
        # GET /orders/{id} reads each step's record where orders.items.record_at says it is.
        read_write=("idempotency", "orders"),
        read=("inventory", "payments", "ledger", "fences"),
        send=("orders",),
    ),
    # The worker's one dedup is the execution name (orders.runs.WorkflowStarter): no idempotency table.
    "worker": Access(read_write=("orders",), send=("orders-dlq",), consume="orders"),
    **{manifest.step_function(step): _step_access(step) for step in manifest.steps()},
    **{consumer.name: _consumer_access(consumer) for consumer in manifest.consumers()},
    "sweep-accepted": Access(read=("orders",), send=("orders",)),
}
assert ACCESS.keys() == FUNCTIONS.keys()
assert {a.consume for a in ACCESS.values() if a.consume} == set(QUEUE_CONSUMERS)


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """How a function is invoked, which answers two things checkov asks of every function: where
    a failed invocation goes (a Lambda DLQ only ever receives failed asynchronous invocations)
    and what bounds its concurrency when infra/capacity.py reserves none for it."""

    failures: str
    concurrency: str


_SYNCHRONOUS = "a Lambda DLQ only receives failed asynchronous invocations."
_POOL = "a reservation would only carve slots out of the account's shared pool."
BY_API = Invocation(
    failures="Invoked synchronously by API Gateway: a failure is the HTTP answer, and the client "
    f"retries with the same Idempotency-Key; {_SYNCHRONOUS}",
    concurrency="Bounded by the API stage's throttle (api_throttle in cdk.json); a reservation "
    "below it would turn Lambda throttles into 5xx answers, and infra/capacity.py reserves only "
    "where a cap protects a downstream limit.",
)
BY_QUEUE = Invocation(
    failures="Invoked synchronously by its SQS event source mapping: a failed message returns to "
    f"its queue and, after maxReceiveCount receives, to the queue's alarmed DLQ; {_SYNCHRONOUS}",
    concurrency="Bounded by its SQS event source mapping's MaximumConcurrency (infra/capacity.py); " + _POOL,
)
BY_WORKFLOW = Invocation(
    failures="Invoked synchronously by the order workflow (Step Functions): failures are retried "
    "or caught there, and an unhandled one fails the execution (alarmed) for a redrive (Standard) "
    f"or for the orders queue to run the order again under the same token (Express); {_SYNCHRONOUS}",
    concurrency="Bounded by the orders the worker admits into the workflow (its reserved "
    "concurrency, infra/capacity.py); only the charge step, which calls the rate-limited "
    "provider, needs a reservation of its own.",
)
BY_SCHEDULE = Invocation(
    failures="Invoked asynchronously by an EventBridge schedule whose event carries nothing: the "
    f"next run, {SWEEP_EVERY_MINUTES} minutes later, is the retry and finds the same orders; a "
    "failure trips the function's errors alarm.",
    concurrency=f"One invocation per schedule tick (every {SWEEP_EVERY_MINUTES} minutes); {_POOL}",
)


def _invocation(function: str) -> Invocation:
    if function == "api":
        return BY_API
    if ACCESS[function].consume:
        return BY_QUEUE
    if function in {manifest.step_function(step) for step in manifest.steps()}:
        return BY_WORKFLOW
    if function == "sweep-accepted":
        return BY_SCHEDULE
    raise ValueError(f"how is {function} invoked?")


def _entry_env(function: str) -> dict[str, str]:
    """Which entry of orders.workflow the function runs (its one shared handler reads it)."""
    steps = {manifest.step_function(step): step.name for step in manifest.steps()}
    if function in steps:
        return {"STEP_NAME": steps[function]}
    if function in {c.name for c in manifest.consumers()}:
        return {"CONSUMER_NAME": function}
    return {}


def _failed_alarm_description(config: StageConfig) -> str:
    """What an operator reads when an order workflow execution failed (the workflow's alarm)."""
    after = (
        "the orders queue runs it again under the same token, and a run that fails on every "
        "receive ends in the orders DLQ with the execution's error"
        if config.workflow is WorkflowType.EXPRESS
        else "fix the cause, then redrive it"
    )
    return (
        f"An execution of {config.name('order-workflow')} failed on an unhandled error or its time "
        f"limit; {after} (declined orders end in Succeed, not here)."
    )


class AppStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StageConfig,
        data: DataStack,
        capacity: CapacityPlan,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"{config.service} {config.stage}: functions, order workflow, API, alarms",
        )
        code = asset.code()
        powertools = lambda_.LayerVersion.from_layer_version_arn(
            self,
            "PowertoolsLayer",
            ssm.StringParameter.value_for_string_parameter(self, POWERTOOLS_LAYER_PARAMETER),
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

        self.functions: dict[str, lambda_.Function] = {}
        for name, sizing in functions_for(config.workflow).items():
            access = ACCESS[name]
            env = dict(common_env)
            for table in (*access.read_write, *access.read):
                env[manifest.table_env(table)] = data.tables[table].table_name
            for queue in access.send:
                env[manifest.queue_env(queue)] = data.queues[queue].queue_url
            env.update(_entry_env(name))
            function = ServiceFunction(
                self,
                f"{pascal(name)}",
                function_name=config.name(name),
                handler=sizing.handler,
                timeout=sizing.timeout,
                memory_mb=sizing.memory_mb,
                description=sizing.description,
                runtime=RUNTIME,
                architecture=ARCHITECTURE,
                code=code,
                layers=[powertools],
                environment=env,
                log_level=config.log_level,
                retain_logs=config.retain_data,
                key=data.key,
                reserved_concurrency=capacity.reserved_concurrency.get(name),
            ).function
            invocation = _invocation(name)
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

        fn = self.functions
        workflow = FencedWorkflow(
            self,
            "OrderWorkflow",
            state_machine_name=config.name("order-workflow"),
            workflow_type=sfn.StateMachineType(config.workflow.value),
            express_timeout_seconds=EXPRESS_EXECUTION_TIMEOUT_SECONDS,
            failed_alarm_description=_failed_alarm_description(config),
            retain_logs=config.retain_data,
            log_key=data.key,
            steps=[
                StepSpec(
                    name=step.name,
                    function=fn[manifest.step_function(step)],
                    next=manifest.next_of(step),
                    catch=dict(step.catch),
                )
                for step in manifest.steps()
            ],
        )
        state_machine = workflow.state_machine
        worker = fn["worker"]
        worker.add_environment("STATE_MACHINE_ARN", state_machine.state_machine_arn)
        worker.add_environment("THROTTLE_BACKOFF_SECONDS", ",".join(map(str, THROTTLE_BACKOFF_SCHEDULE)))
        worker.add_environment("WORKFLOW_TYPE", config.workflow.value)
        # The worker dead-letters an Express run that failed on its last receive with the
        # execution's error as the reason (SQS's own move to the DLQ would carry none).
        worker.add_environment("MAX_RECEIVE_COUNT", str(capacity.max_receive_count))
        if config.workflow is WorkflowType.EXPRESS:
            state_machine.grant_start_sync_execution(worker)
        else:
            self._grant_start_and_describe(config, state_machine, worker)
        CfnOutput(self, "StateMachineArn", value=state_machine.state_machine_arn)
        sweeper = fn["sweep-accepted"]
        sweeper.add_environment("STRANDED_AFTER_SECONDS", str(STRANDED_AFTER_MINUTES * 60))
        events.Rule(
            self,
            "SweepAcceptedSchedule",
            rule_name=config.name("sweep-accepted"),
            description="Re-send the message of orders stranded in ACCEPTED",
            schedule=events.Schedule.rate(Duration.minutes(SWEEP_EVERY_MINUTES)),
            # no retries: the next scheduled run is the retry, and it finds the same orders
            targets=[targets.LambdaFunction(sweeper, retry_attempts=0)],
        )
        ServiceDashboard(
            self,
            "Dashboard",
            dashboard_name=config.name("dashboard"),
            namespace=config.service,  # POWERTOOLS_METRICS_NAMESPACE
            service=config.service,  # POWERTOOLS_SERVICE_NAME
            sweeper_step="SweepAccepted",  # orders.handlers.sweep.STEP (tests/infra/test_dashboard.py)
            state_machine=state_machine,
            queues=data.queues,
        )

        api = OrdersApi(
            self,
            "OrdersApi",
            api_name=config.name("api"),
            stage_name=config.stage,
            handler=fn["api"],
            auth=config.api_auth,
            throttle=config.api_throttle,
            retain_logs=config.retain_data,
            log_key=data.key,
        )
        CfnOutput(self, "ApiUrl", value=api.api.url)

    def _grant_start_and_describe(
        self, config: StageConfig, state_machine: sfn.StateMachine, worker: lambda_.Function
    ) -> None:
        """Standard: StartExecution, and DescribeExecution for a start whose name exists."""
        state_machine.grant_start_execution(worker)
        # DescribeExecution takes an execution ARN; executions are named by the worker, so the
        # grant is every execution of this one state machine (the name is known at synth).
        executions = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{config.name('order-workflow')}:*",
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
                f"{config.name('order-workflow')}:*]",
                "states:DescribeExecution on the executions of the order workflow only; their names "
                "are chosen at run time, so the execution id must be a wildcard.",
            )
