"""A fenced saga as a Step Functions state machine (Standard or Express), built from a list of step specs.

Every step is a Lambda task that receives the whole state (the business id, `run`, `token`, earlier
`results`) and whose return value lands at `$.results.<StepName>`. The step fences on its
(business id, run, step), so a retried, redriven or restarted task re-runs safely; this construct
gives every task the same transport Retry and routes business errors by Catch to a compensation
step, with the error at `$.error`. The same steps build both types; Express adds its time limit
(TimeoutSeconds) and logs errors only (see `LOG_LEVELS`).

The error names are the runtime half's exception classes (reliability.errors), read by name: the
Lambda runtime reports `errorType` = the exception's class name, so a renamed class renames its
Retry here too. The waits are reliability.cdk.windows'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from reliability.cdk.log_group import log_group
from reliability.cdk.nag import acknowledge
from reliability.cdk.windows import (
    EXPRESS_TIME_LIMIT_SECONDS,
    FENCE_WAIT_BACKOFF_RATE,
    FENCE_WAIT_MAX_ATTEMPTS,
    fence_wait_interval_seconds,
)
from reliability.errors import FenceBusy, StaleFence, TransientError

# What the Lambda service and runtime report when an invocation failed for a reason a retry may
# cure (the service, the runtime dying, a timeout).
LAMBDA_TRANSIENT_ERRORS = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
    "Runtime.ExitError",
    "Sandbox.Timedout",
)
# Transient failures only: those, and the runtime half's TransientError (an unavailable store,
# a throttle). Business errors (BusinessError subclasses) are never retried; they are caught.
RETRYABLE_ERRORS = (*LAMBDA_TRANSIENT_ERRORS, TransientError.__name__)
RETRY_INTERVAL = Duration.seconds(1)
RETRY_BACKOFF_RATE = 2.0
RETRY_MAX_ATTEMPTS = 6
RETRY_MAX_DELAY = Duration.seconds(30)
# FenceBusy means an earlier attempt holds the step's lease, typically one that died (its retry
# arrives here at once). Waiting it out is paced by the lease (reliability.cdk.windows), not by
# jitter. StaleFence (a leased step's completion lost its fence to a later attempt) is the same
# wait: nothing of this attempt was committed, and the retry finds the step done (a skip), still
# held (FenceBusy), or free to take.
FENCE_WAIT_ERRORS = (FenceBusy.__name__, StaleFence.__name__)
SUCCEED_STATE = "Done"
# What the state machine's log group receives. Standard: every event (without execution data),
# beside its history API. Express keeps no history, so its log group is the only record of its
# executions; ERROR logs each failure (the failed task, the execution failed or timed out) and
# nothing of a run that succeeds, where ALL would write every state's events of every run. A run
# that succeeded is told by the function logs and fence records.
LOG_LEVELS = {
    sfn.StateMachineType.STANDARD: sfn.LogLevel.ALL,
    sfn.StateMachineType.EXPRESS: sfn.LogLevel.ERROR,
}
_FAILED_RUNBOOK = {
    sfn.StateMachineType.STANDARD: "fix the cause, then redrive it",
    sfn.StateMachineType.EXPRESS: "the queue that started it runs it again under the same token",
}


def _lease_seconds(step: StepSpec) -> int:
    """An attempt holds the step's fence for at most the function's timeout."""
    if step.function.timeout is None:
        raise ValueError(f"{step.name}: a fenced step's function needs an explicit timeout (its lease)")
    return int(step.function.timeout.to_seconds())


def _targets(step: StepSpec) -> list[str]:
    return [step.next, *step.catch] if step.next else list(step.catch)


def _check_graph(steps: Sequence[StepSpec]) -> None:
    """Unique names, no dangling routes, every step reachable from the first (CDK would
    silently leave an unreachable step out of the definition)."""
    names = [step.name for step in steps]
    if not steps or len(set(names)) != len(names) or SUCCEED_STATE in names:
        raise ValueError(f"step names must be unique, non-empty and not {SUCCEED_STATE!r}: {names}")
    by_name = {step.name: step for step in steps}
    for step in steps:
        if missing := [t for t in _targets(step) if t not in by_name]:
            raise ValueError(f"{step.name} routes to unknown steps {missing}")
    reached, frontier = {steps[0].name}, [steps[0].name]
    while frontier:
        for target in _targets(by_name[frontier.pop()]):
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    if unreachable := [n for n in names if n not in reached]:
        raise ValueError(f"steps {unreachable} cannot be reached from {steps[0].name}")


@dataclass(frozen=True, kw_only=True)
class StepSpec:
    """One task: its state name, its function, where it goes next, and which errors it catches.

    `next` is another step's name, or None for the final Succeed state. `catch` maps a state
    name to the error names that route there. The function's timeout is the step's fence lease.
    """

    name: str
    function: lambda_.Function
    next: str | None
    catch: Mapping[str, Sequence[str]] = field(default_factory=dict)


class FencedWorkflow(Construct):
    """`state_machine` (`workflow_type`, JSONPath, logging at `LOG_LEVELS` without execution data,
    X-Ray; Express with its TimeoutSeconds, `express_timeout_seconds`) and `failed_alarm` (any
    execution that ended FAILED, TIMED_OUT or ABORTED; `failed_alarm_description` says what an
    operator does about it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine_name: str,
        steps: Sequence[StepSpec],
        retain_logs: bool,
        log_key: kms.IKey | None,
        workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD,
        express_timeout_seconds: int = EXPRESS_TIME_LIMIT_SECONDS,
        failed_alarm_description: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        _check_graph(steps)
        express = workflow_type == sfn.StateMachineType.EXPRESS
        if express and not 0 < express_timeout_seconds <= EXPRESS_TIME_LIMIT_SECONDS:
            raise ValueError(
                f"an Express execution's TimeoutSeconds must be 1..{EXPRESS_TIME_LIMIT_SECONDS}, "
                f"got {express_timeout_seconds}"
            )
        done = sfn.Succeed(self, SUCCEED_STATE)
        states = {step.name: self._task(step) for step in steps}
        for step in steps:
            task = states[step.name]
            for target, errors in step.catch.items():
                task.add_catch(states[target], errors=list(errors), result_path="$.error")
            task.next(states[step.next] if step.next else done)

        self.log_group = log_group(
            self,
            "Logs",
            name=f"/aws/vendedlogs/states/{state_machine_name}",
            retain=retain_logs,
            key=log_key,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=state_machine_name,
            state_machine_type=workflow_type,
            query_language=sfn.QueryLanguage.JSON_PATH,
            definition_body=sfn.DefinitionBody.from_chainable(states[steps[0].name]),
            logs=sfn.LogOptions(
                destination=self.log_group, level=LOG_LEVELS[workflow_type], include_execution_data=False
            ),
            # Express: its time limit, stated (the service checks its steps fit in it).
            timeout=Duration.seconds(express_timeout_seconds) if express else None,
            tracing_enabled=True,
        )
        if express:
            acknowledge(
                self.state_machine,
                "SF1",
                "Express logs at ERROR on purpose (LOG_LEVELS): every failure is logged; ALL would "
                "add every state's events of every successful run to the bill, and a run's story "
                "is told by its function logs and fence records.",
            )
        self._acknowledge_role_policy(steps)
        self.failed_alarm = cloudwatch.Alarm(
            self,
            "ExecutionsFailed",
            alarm_name=f"{state_machine_name}-executions-failed",
            alarm_description=failed_alarm_description
            or (
                f"An execution of {state_machine_name} failed on an unhandled error or its time "
                f"limit; {_FAILED_RUNBOOK[workflow_type]}."
            ),
            metric=cloudwatch.MathExpression(
                expression="failed + timedout + aborted",
                using_metrics={
                    "failed": self.state_machine.metric_failed(period=Duration.minutes(1)),
                    "timedout": self.state_machine.metric_timed_out(period=Duration.minutes(1)),
                    "aborted": self.state_machine.metric_aborted(period=Duration.minutes(1)),
                },
                period=Duration.minutes(1),
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _task(self, step: StepSpec) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            step.name,
            lambda_function=step.function,
            payload_response_only=True,  # the whole state in, the function's return value out
            retry_on_service_exceptions=False,  # replaced by the single Retry below
            result_path=f"$.results.{step.name}",
        )
        task.add_retry(
            errors=list(FENCE_WAIT_ERRORS),
            interval=Duration.seconds(fence_wait_interval_seconds(_lease_seconds(step))),
            backoff_rate=FENCE_WAIT_BACKOFF_RATE,
            max_attempts=FENCE_WAIT_MAX_ATTEMPTS,
            jitter_strategy=sfn.JitterType.NONE,
        )
        task.add_retry(
            errors=list(RETRYABLE_ERRORS),
            interval=RETRY_INTERVAL,
            backoff_rate=RETRY_BACKOFF_RATE,
            max_attempts=RETRY_MAX_ATTEMPTS,
            max_delay=RETRY_MAX_DELAY,
            jitter_strategy=sfn.JitterType.FULL,
        )
        return task

    def _acknowledge_role_policy(self, steps: Sequence[StepSpec]) -> None:
        policy = self.state_machine.role.node.try_find_child("DefaultPolicy")
        if policy is None:
            return
        acknowledge(
            policy,
            "IAM5[Resource::*]",
            "Step Functions log delivery (logs:CreateLogDelivery, ...) and X-Ray tracing "
            "(xray:PutTraceSegments, ...) support no resource-level permissions.",
        )
        stack = Stack.of(self)
        for step in steps:
            function = step.function.node.default_child
            if not isinstance(function, CfnElement):
                continue
            acknowledge(
                policy,
                f"IAM5[Resource::<{stack.get_logical_id(function)}.Arn>:*]",
                f"lambda:InvokeFunction on the versions and aliases (`:*`) of the {step.name} "
                "function only, which the Lambda task integration grants with the function itself.",
            )
