"""How hard a service may push AWS and its external provider: written once, per stage.

Three layers, each fact once:
- ``QUOTAS``: AWS's published default quotas, each with the Service Quotas name to raise and the
  page it comes from.
- ``StageCapacity``: what a stage's account and provider allow (``cdk.json``,
  ``retrysafe.stages.<stage>.capacity``).
- ``CapacityPlan``: the settings the templates carry, derived from the two above and the
  service's declaration, with the reason for each (ESM ``MaximumConcurrency``, reserved
  concurrency, batch sizes and windows, ``maxReceiveCount``, the worker's visibility backoff).

The design: the worker's queue absorbs a burst, and the worker's event source mapping admits
runs into the workflow no faster than the tightest downstream limit allows. Everything past
the worker then runs below its quotas, so a throttle is a rare retry, not a storm that spends a
legitimate message's receives.

Pure Python (no aws_cdk).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reliability.cdk import windows
from reliability.cdk.config import WorkflowType
from reliability.cdk.declared import provider_steps, step_function
from reliability.cdk.windows import (
    EXPRESS_TIME_LIMIT_SECONDS,
    LAMBDA_MAX_TIMEOUT_SECONDS,
    fence_ride_out_seconds,
)
from reliability.declaration import Service


@dataclass(frozen=True, kw_only=True)
class Quota:
    """One published limit: its value, the Service Quotas name to raise it, where it is stated."""

    value: float
    name: str
    source: str


_LAMBDA = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
_ESM = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"
_SFN = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"
_DDB = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
_APIGW = "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"

# Step Functions' token buckets differ by region: us-east-1, us-west-2 and eu-west-1 get the
# larger ones. The templates are region-agnostic, so the derivations below use the smaller
# ("other regions") values: a plan that is safe there is safe everywhere.
QUOTAS: dict[str, Quota] = {
    "lambda_concurrency": Quota(
        value=1000, name="AWS Lambda: Concurrent executions (L-B99A9384)", source=_LAMBDA
    ),
    # Reserved concurrency may take all but this much of the account's pool.
    "lambda_unreserved_minimum": Quota(value=100, name="(fixed by Lambda)", source=_LAMBDA),
    # An SQS event source mapping starts at 5 concurrent batches and adds up to 300 a minute.
    "esm_initial_concurrency": Quota(value=5, name="(fixed by Lambda)", source=_ESM),
    "esm_scale_per_minute": Quota(value=300, name="(fixed by Lambda)", source=_ESM),
    "esm_max_concurrency": Quota(value=1000, name="(fixed by Lambda)", source=_ESM),
    "start_execution_bucket": Quota(
        value=800, name="AWS Step Functions: StartExecution throttle token bucket size", source=_SFN
    ),
    "start_execution_refill": Quota(
        value=150, name="AWS Step Functions: StartExecution throttle token refill rate", source=_SFN
    ),
    "start_execution_bucket_us_east_1": Quota(
        value=1300, name="AWS Step Functions: StartExecution throttle token bucket size", source=_SFN
    ),
    "start_execution_refill_us_east_1": Quota(
        value=300, name="AWS Step Functions: StartExecution throttle token refill rate", source=_SFN
    ),
    "state_transition_bucket": Quota(
        value=800, name="AWS Step Functions: StateTransition throttle token bucket size", source=_SFN
    ),
    "state_transition_refill": Quota(
        value=800, name="AWS Step Functions: StateTransition throttle token refill rate", source=_SFN
    ),
    "state_transition_bucket_us_east_1": Quota(
        value=5000, name="AWS Step Functions: StateTransition throttle token bucket size", source=_SFN
    ),
    "state_transition_refill_us_east_1": Quota(
        value=5000, name="AWS Step Functions: StateTransition throttle token refill rate", source=_SFN
    ),
    # A single partition (so a single hot item) serves at most 1,000 write units a second;
    # on-demand tables scale partitions, never one item past this.
    "dynamodb_partition_wcu": Quota(value=1000, name="(per partition, fixed)", source=_DDB),
    "dynamodb_table_wru": Quota(
        value=40000, name="Amazon DynamoDB: Table-level write throughput limit", source=_DDB
    ),
    "apigw_account_rps": Quota(
        value=10000, name="Amazon API Gateway: Throttle rate (per account, per Region)", source=_APIGW
    ),
}


def quota(key: str) -> float:
    return QUOTAS[key].value


# --- what the code costs, measured or bounded; the derivations below use these -------------------
# The worker's time per message: dedup claim, entity read, StartExecution, dedup complete (4 calls
# at 10-30 ms on AWS). One worker instance therefore admits at most 1 / this runs a second.
WORKER_SECONDS_PER_MESSAGE = 0.08
# A provider call: its answer time (Stripe's API answers in a few hundred ms).
PROVIDER_CALL_SECONDS = 0.3
# A step that only touches DynamoDB: a Query and a transaction.
STEP_SECONDS = 0.05
# Admission uses this share of the tightest limit; the rest is for retries. A provider brownout
# refusing 20 % of calls makes each provider step take 1.25 calls on average, and the state machine's
# full-jitter retries bunch up: at 0.8 the scale model's soak exhausted retries in that brownout
# (`make scale`), at 0.6 it rides it out.
HEADROOM = 0.6


def transitions_per_run(service: Service) -> int:
    """A happy-path execution enters this many states (its tasks + Succeed); each is one state
    transition."""
    return len(service.happy_path()) + 1


# SQS returns at most 10 messages per receive; a larger batch needs a batching window, which
# makes every run wait for the window. Each record is its own StartExecution / transaction, so
# a larger batch would save invocations only, not calls.
BATCH_SIZE = 10
BATCH_WINDOW_SECONDS = 0

# The worker's answer to a throttled StartExecution: keep the message and make it visible again
# after BACKOFF_BASE * 2^(receives-1) seconds, at most BACKOFF_CAP (ChangeMessageVisibility).
THROTTLE_BACKOFF_BASE_SECONDS = 10
THROTTLE_BACKOFF_CAP_SECONDS = 300
# The longest throttle storm a message must ride out without reaching the DLQ: a drained
# StartExecution bucket refills in 800 / 150 = 5.3 s, but another tenant of the account or a
# redrive of thousands of executions can keep it drained for minutes. 15 minutes.
THROTTLE_STORM_SECONDS = 900
# Receives left for ordinary transient failures (a crashed invocation, a timeout), each of which
# waits a full visibility timeout.
TRANSIENT_RECEIVES = 3


def throttle_backoff_seconds(receive_count: int) -> int:
    """The visibility a throttled message gets on its ``receive_count``-th receive (1-based)."""
    exponent = max(receive_count, 1) - 1
    return int(min(THROTTLE_BACKOFF_BASE_SECONDS * 2**exponent, THROTTLE_BACKOFF_CAP_SECONDS))


def receives_to_ride_out(storm_seconds: float) -> int:
    """The receives a message spends while backing off through ``storm_seconds`` of throttling."""
    waited, receives = 0, 0
    while waited < storm_seconds:
        receives += 1
        waited += throttle_backoff_seconds(receives)
    return receives


# Receives must outlast the longest throttle storm the backoff can ride out, plus a few transient
# failures; a poison message never spends them (the handler dead-letters it at once).
MAX_RECEIVE_COUNT = receives_to_ride_out(THROTTLE_STORM_SECONDS) + TRANSIENT_RECEIVES
# What the worker gets (THROTTLE_BACKOFF_SECONDS): the visibility for each receive up to the last.
THROTTLE_BACKOFF_SCHEDULE = tuple(throttle_backoff_seconds(n) for n in range(1, MAX_RECEIVE_COUNT + 1))
# Without these settings (the template before the capacity plan) the queues had 5 receives and
# the event source mappings no maximum: the scale model's mutant run uses this.
UNPLANNED_MAX_RECEIVE_COUNT = 5


# --- the workflow's time ----------------------------------------------------------------------
# AWS's limits (Express's 5 minutes, Lambda's longest timeout) and the fence waits are the
# library's (reliability.cdk.windows). The Express state machine's TimeoutSeconds: AWS's own limit,
# written into the definition so it is read where the definition is (the template, the emulators,
# whose interpreter honours it and knows no 5-minute rule of its own). The worker's timeout and its
# queue's visibility follow from it.
EXPRESS_EXECUTION_TIMEOUT_SECONDS = EXPRESS_TIME_LIMIT_SECONDS
# The worker's own work around a start: read the entity, record it running, the start itself (or
# the record of an Express execution's end), a dead-letter send: a few calls, each bounded by its
# SDK timeouts. The whole timeout of a Standard worker; an Express worker also waits for the run.
WORKER_OWN_SECONDS = 30


def worker_timeout_seconds(workflow: WorkflowType) -> int:
    """The worker's function timeout: its own calls, and on Express the execution it waits for (so
    the execution always ends, at its TimeoutSeconds at the latest, before the worker is killed)."""
    if workflow is WorkflowType.STANDARD:
        return WORKER_OWN_SECONDS
    return EXPRESS_EXECUTION_TIMEOUT_SECONDS + WORKER_OWN_SECONDS


def express_execution_seconds(service: Service) -> float:
    """A happy-path Express execution's time: its tasks one after the other (each a DynamoDB step,
    a provider step a provider call). The worker waits this long per run."""
    calls_provider = {step.name for step in provider_steps(service)}
    return sum(
        PROVIDER_CALL_SECONDS if name in calls_provider else STEP_SECONDS for name in service.happy_path()
    )


def worker_seconds_per_message(service: Service, workflow: WorkflowType) -> float:
    """What one message holds a worker instance for: its calls, on Express also the run."""
    if workflow is WorkflowType.STANDARD:
        return WORKER_SECONDS_PER_MESSAGE
    return WORKER_SECONDS_PER_MESSAGE + express_execution_seconds(service)


class CapacityError(ValueError):
    """The stage's capacity entry is missing, malformed or cannot be met."""


def check_express_time(
    *,
    leases: Mapping[str, int],
    happy_path: Sequence[str],
    execution_timeout: int = EXPRESS_EXECUTION_TIMEOUT_SECONDS,
    worker_timeout: int | None = None,
) -> None:
    """An Express stage's times fit, or CapacityError naming the numbers (run at synth):
    - the execution's TimeoutSeconds is within AWS's 5 minutes;
    - one execution can ride out a dead attempt: every happy-path step once at its timeout (its
      lease), plus the longest step's lease and FenceBusy waits, fit in TimeoutSeconds (an
      execution that needs longer is stopped, and the queue starts the run again, fences skipping
      what is done: slower, not wrong);
    - the worker outlasts the execution it waits for, within Lambda's maximum, and its queue's
      visibility outlasts the worker (a message is never redelivered while its execution
      can still run)."""
    worker = worker_timeout if worker_timeout is not None else execution_timeout + WORKER_OWN_SECONDS
    one_attempt_each = sum(leases[name] for name in happy_path)
    slowest = max(leases, key=lambda name: fence_ride_out_seconds(leases[name]) + leases[name])
    ride_out = fence_ride_out_seconds(leases[slowest]) + leases[slowest]
    problems = []
    if execution_timeout > EXPRESS_TIME_LIMIT_SECONDS:
        problems.append(
            f"the execution's TimeoutSeconds {execution_timeout} s is past Express's limit of "
            f"{EXPRESS_TIME_LIMIT_SECONDS} s"
        )
    if one_attempt_each + ride_out > execution_timeout:
        problems.append(
            f"the happy path at one attempt per step ({one_attempt_each} s) plus {slowest}'s lease "
            f"and FenceBusy waits ({ride_out} s) take {one_attempt_each + ride_out} s, more than the "
            f"execution's {execution_timeout} s: shorten the step timeouts or the waits"
        )
    if not execution_timeout < worker <= LAMBDA_MAX_TIMEOUT_SECONDS:
        problems.append(
            f"the worker's timeout {worker} s must exceed the execution's {execution_timeout} s and "
            f"stay within Lambda's {LAMBDA_MAX_TIMEOUT_SECONDS} s"
        )
    visibility = visibility_timeout_seconds(worker)
    if visibility <= worker:
        problems.append(f"the worker queue's visibility {visibility} s is not past the worker's {worker} s")
    if problems:
        raise CapacityError("Express workflow times do not fit: " + "; ".join(problems))


@dataclass(frozen=True, kw_only=True)
class StageCapacity:
    """What one stage's account and external provider allow (cdk.json, per stage)."""

    # The account's Lambda concurrency quota in this stage's region (default 1,000; new accounts
    # can start lower until AWS raises it).
    account_concurrency: int
    # The provider's rate limit for this stage's account (Stripe: 100/s live, 25/s test).
    provider_requests_per_second: float


@dataclass(frozen=True, kw_only=True)
class CapacityPlan:
    """The settings the templates carry, derived from a StageCapacity (see ``plan``)."""

    capacity: StageCapacity
    workflow: WorkflowType
    # The runs a second the worker may admit into the workflow, and which limit sets it.
    admitted_runs_per_second: float
    binding_limit: str
    # ESM MaximumConcurrency per queue-consuming function.
    max_concurrency: Mapping[str, int]
    # Reserved concurrency per function that has one.
    reserved_concurrency: Mapping[str, int]
    batch_size: int = BATCH_SIZE
    # The worker's: on Express each record holds its invocation for its whole execution (up to
    # the execution's timeout), so a batch of ten, one record after the other, could outlast
    # Lambda's 15 minutes; one record per invocation, and the concurrency above to match.
    worker_batch_size: int = BATCH_SIZE
    batch_window_seconds: int = BATCH_WINDOW_SECONDS
    max_receive_count: int = MAX_RECEIVE_COUNT

    @property
    def reserved_total(self) -> int:
        return sum(self.reserved_concurrency.values())

    def batch_size_of(self, function: str) -> int:
        """The event source mapping's batch size for a queue-consuming function."""
        return self.worker_batch_size if function == "worker" else self.batch_size


def downstream_limits(
    service: Service, capacity: StageCapacity, own_limits: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Runs a second each downstream limit allows (before headroom): the provider's, Step
    Functions', and the service's `own_limits` (a hot item its effects write, ...)."""
    return {
        "provider rate limit": capacity.provider_requests_per_second,
        QUOTAS["start_execution_refill"].name: quota("start_execution_refill"),
        QUOTAS["state_transition_refill"].name: quota("state_transition_refill")
        / transitions_per_run(service),
        **(own_limits or {}),
    }


def plan(
    service: Service,
    capacity: StageCapacity,
    workflow: WorkflowType = WorkflowType.STANDARD,
    *,
    own_limits: Mapping[str, float] | None = None,
) -> CapacityPlan:
    """Derive every setting from the stage's capacity and workflow type and the service's
    declaration; CapacityError when it cannot hold. The admission limits are Standard's
    (StartExecution and state-transition buckets): Express's are larger, so a plan that holds under
    them holds on Express too. `own_limits`: the service's own limits in runs a second, by name."""
    if workflow is WorkflowType.EXPRESS:
        check_express_time(
            leases={step.name: step.timeout_seconds for step in service.steps},
            happy_path=service.happy_path(),
            worker_timeout=worker_timeout_seconds(workflow),
        )
    limits = downstream_limits(service, capacity, own_limits)
    binding = min(limits, key=lambda name: limits[name])
    admitted = limits[binding] * HEADROOM
    # One worker instance admits at most 1 / (its seconds per message) runs a second, so this
    # many instances admit `admitted`. Lambda's floor for MaximumConcurrency is 2.
    worker = max(2, math.floor(admitted * worker_seconds_per_message(service, workflow)))
    # Each admitted run publishes one event to each consumer queue: the consumers need as many
    # instances as a Standard worker to keep up (a consumer's time per event is about the worker's
    # per message), and no more (the service's own limits are already inside the admitted rate).
    # An Express worker's extra instances only wait for executions.
    consumers = max(2, math.floor(admitted * WORKER_SECONDS_PER_MESSAGE))
    # Each step that calls the provider (a leased step the declaration gives a `reconcile`: an
    # external system with its own idempotency keys) gets this reserved concurrency: it caps the
    # calls in flight to the provider, so their rate stays under the provider's limit however
    # retries and redrives bunch up: in-flight / call time <= limit. It also guarantees the step
    # its slots when the rest of the account's pool is busy.
    per_provider_step = max(1, math.floor(capacity.provider_requests_per_second * PROVIDER_CALL_SECONDS))
    # The worker's reserved concurrency equals its MaximumConcurrency (AWS's advice when both are
    # set): the ESM then never invokes into a throttle, which would return the batch to the queue
    # after a full visibility timeout and spend a receive of every message in it.
    reserved = {
        "worker": worker,
        **{step_function(s): per_provider_step for s in provider_steps(service)},
    }
    result = CapacityPlan(
        capacity=capacity,
        workflow=workflow,
        admitted_runs_per_second=admitted,
        binding_limit=binding,
        max_concurrency={"worker": worker, **{c.name: consumers for c in service.consumers}},
        reserved_concurrency=reserved,
        worker_batch_size=BATCH_SIZE if workflow is WorkflowType.STANDARD else 1,
    )
    unreserved = capacity.account_concurrency - result.reserved_total
    if unreserved < quota("lambda_unreserved_minimum"):
        raise CapacityError(
            f"reserved concurrency {result.reserved_total} leaves {unreserved} of the account's "
            f"{capacity.account_concurrency}; Lambda keeps at least "
            f"{quota('lambda_unreserved_minimum'):g} unreserved. Raise "
            f"'{QUOTAS['lambda_concurrency'].name}' or lower provider_requests_per_second."
        )
    if provider_steps(service) and per_provider_step / PROVIDER_CALL_SECONDS < admitted:
        raise CapacityError(
            f"a provider step's {per_provider_step} reserved slots carry "
            f"{per_provider_step / PROVIDER_CALL_SECONDS:g} calls/s, "
            f"fewer than the {admitted:g} runs/s admitted"
        )
    return result


def stage_capacity(context: Mapping[str, Any], stage: str) -> StageCapacity:
    """The ``capacity`` entry of ``retrysafe.stages.<stage>`` in the CDK context."""
    try:
        raw = context["stages"][stage]["capacity"]
        return StageCapacity(
            account_concurrency=int(raw["account_concurrency"]),
            provider_requests_per_second=float(raw["provider_requests_per_second"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CapacityError(
            f"retrysafe.stages.{stage}.capacity needs account_concurrency and "
            f"provider_requests_per_second: {error!r}"
        ) from error


def visibility_timeout_seconds(consumer_timeout_seconds: float) -> int:
    return windows.visibility_timeout_seconds(consumer_timeout_seconds, BATCH_WINDOW_SECONDS)
