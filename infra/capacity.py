"""How hard the service may push AWS and the payment provider: written once, per stage.

Three layers, each fact once:
- ``QUOTAS``: AWS's published default quotas (and the provider's documented rate limit), each
  with the Service Quotas name to raise and the page it comes from. The scale model
  (``scale/``) reads its token buckets and pools from here too.
- ``StageCapacity``: what a stage's account and provider allow (``cdk.json``,
  ``retrysafe.stages.<stage>.capacity``).
- ``CapacityPlan``: the settings the templates carry, derived from the two above with the reason
  for each (ESM ``MaximumConcurrency``, reserved concurrency, batch sizes and windows,
  ``maxReceiveCount``, the worker's visibility backoff).

The design: the orders queue absorbs a burst, and the worker's event source mapping admits
orders into the workflow no faster than the tightest downstream limit allows. Everything past
the worker then runs below its quotas, so a throttle is a rare retry, not a storm that spends a
legitimate message's receives.

Pure Python (no aws_cdk): the stacks, the infra tests and the scale model all import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra import manifest


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
# ("other regions") values: a plan that is safe there is safe everywhere. The scale model runs
# in us-east-1, the local cloud's region.
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
# The worker's time per message: dedup claim, order read, StartExecution, dedup complete (4 calls
# at 10-30 ms on AWS). One worker instance therefore admits at most 1 / this orders a second.
WORKER_SECONDS_PER_MESSAGE = 0.08
# A charge: the provider's answer time (Stripe's API answers in a few hundred ms).
PROVIDER_CALL_SECONDS = 0.3
# A step that only touches DynamoDB: a Query and a transaction.
STEP_SECONDS = 0.05
# Admission uses this share of the tightest limit; the rest is for retries. A provider brownout
# refusing 20 % of calls makes each charge take 1.25 calls on average, and the state machine's
# full-jitter retries bunch up: at 0.8 the scale model's soak exhausted retries in that brownout
# (`make scale`), at 0.6 it rides it out.
HEADROOM = 0.6
# A happy-path execution enters this many states (its tasks + Succeed); each is one state
# transition. tests/infra/test_capacity.py pins it to the synthesized state machine.
TRANSITIONS_PER_ORDER = len(manifest.happy_path()) + 1
# The analytics consumer adds every event to one item per day (`day#<date>`/`total`) in a
# transaction: 2 write units per item of up to 1 KB, so that item takes at most 500 events/s.
TRANSACTIONAL_WRU_PER_ITEM = 2

# SQS returns at most 10 messages per receive; a larger batch needs a batching window, which
# makes every order wait for the window. Each record is its own StartExecution / transaction, so
# a larger batch would save invocations only, not calls.
BATCH_SIZE = 10
BATCH_WINDOW_SECONDS = 0

# AWS's guidance for Lambda event sources: a visibility timeout of at least six times the function
# timeout (plus the batching window), so a batch still running is not redelivered mid-flight.
VISIBILITY_TIMEOUT_FACTOR = 6

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


class CapacityError(ValueError):
    """The stage's capacity entry is missing, malformed or cannot be met."""


@dataclass(frozen=True, kw_only=True)
class StageCapacity:
    """What one stage's account and payment provider allow (cdk.json, per stage)."""

    # The account's Lambda concurrency quota in this stage's region (default 1,000; new accounts
    # can start lower until AWS raises it).
    account_concurrency: int
    # The payment provider's rate limit for this stage's account (Stripe: 100/s live, 25/s test).
    provider_requests_per_second: float


@dataclass(frozen=True, kw_only=True)
class CapacityPlan:
    """The settings the templates carry, derived from a StageCapacity (see ``plan``)."""

    capacity: StageCapacity
    # The orders a second the worker may admit into the workflow, and which limit sets it.
    admitted_orders_per_second: float
    binding_limit: str
    # ESM MaximumConcurrency per queue-consuming function.
    max_concurrency: Mapping[str, int]
    # Reserved concurrency per function that has one.
    reserved_concurrency: Mapping[str, int]
    batch_size: int = BATCH_SIZE
    batch_window_seconds: int = BATCH_WINDOW_SECONDS
    max_receive_count: int = MAX_RECEIVE_COUNT

    @property
    def reserved_total(self) -> int:
        return sum(self.reserved_concurrency.values())


def downstream_limits(capacity: StageCapacity) -> dict[str, float]:
    """Orders a second each downstream limit allows (before headroom)."""
    return {
        "payment provider rate limit": capacity.provider_requests_per_second,
        QUOTAS["start_execution_refill"].name: quota("start_execution_refill"),
        QUOTAS["state_transition_refill"].name: quota("state_transition_refill") / TRANSITIONS_PER_ORDER,
        "DynamoDB partition write limit (the daily aggregate item)": quota("dynamodb_partition_wcu")
        / TRANSACTIONAL_WRU_PER_ITEM,
    }


def plan(capacity: StageCapacity) -> CapacityPlan:
    """Derive every setting from the stage's capacity; CapacityError when it cannot hold."""
    limits = downstream_limits(capacity)
    binding = min(limits, key=lambda name: limits[name])
    admitted = limits[binding] * HEADROOM
    # One worker instance admits at most 1 / WORKER_SECONDS_PER_MESSAGE orders a second, so this
    # many instances admit `admitted`. Lambda's floor for MaximumConcurrency is 2.
    worker = max(2, math.floor(admitted * WORKER_SECONDS_PER_MESSAGE))
    # Each admitted order publishes one event to each consumer queue: the consumers need the
    # same number of instances to keep up, and no more (each event is one transaction on the
    # day's aggregate item, already inside the admitted rate).
    consumers = worker
    # Each leased step (an external effect: the declaration's `kind`) gets this reserved
    # concurrency: it caps the calls in flight to the provider, so their
    # rate stays under the provider's limit however retries and redrives bunch up:
    # in-flight / call time <= limit. It also guarantees the step its slots when the rest of the
    # account's pool is busy.
    charge = max(1, math.floor(capacity.provider_requests_per_second * PROVIDER_CALL_SECONDS))
    # The worker's reserved concurrency equals its MaximumConcurrency (AWS's advice when both are
    # set): the ESM then never invokes into a throttle, which would return the batch to the queue
    # after a full visibility timeout and spend a receive of every message in it.
    reserved = {
        "worker": worker,
        **{manifest.step_function(s): charge for s in manifest.steps() if s.kind == "leased"},
    }
    result = CapacityPlan(
        capacity=capacity,
        admitted_orders_per_second=admitted,
        binding_limit=binding,
        max_concurrency={"worker": worker, **{c.name: consumers for c in manifest.consumers()}},
        reserved_concurrency=reserved,
    )
    unreserved = capacity.account_concurrency - result.reserved_total
    if unreserved < quota("lambda_unreserved_minimum"):
        raise CapacityError(
            f"reserved concurrency {result.reserved_total} leaves {unreserved} of the account's "
            f"{capacity.account_concurrency}; Lambda keeps at least "
            f"{quota('lambda_unreserved_minimum'):g} unreserved. Raise "
            f"'{QUOTAS['lambda_concurrency'].name}' or lower provider_requests_per_second."
        )
    if charge / PROVIDER_CALL_SECONDS < admitted:
        raise CapacityError(
            f"the charge step's {charge} reserved slots carry {charge / PROVIDER_CALL_SECONDS:g} "
            f"charges/s, fewer than the {admitted:g} orders/s admitted"
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
    return int(consumer_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR + BATCH_WINDOW_SECONDS)
