"""The sample's capacity plan: the library's derivation (`reliability.cdk.capacity`) over the
orders declaration, with the sample's own limit (the daily aggregate item).

The scale model (``scale/``) and the tests read the quotas, the plan and its constants here.
Pure Python (no aws_cdk).
"""

from __future__ import annotations

from infra import manifest
from reliability.cdk import capacity as _library
from reliability.cdk.capacity import (
    BATCH_SIZE,
    BATCH_WINDOW_SECONDS,
    EXPRESS_EXECUTION_TIMEOUT_SECONDS,
    HEADROOM,
    MAX_RECEIVE_COUNT,
    PROVIDER_CALL_SECONDS,
    QUOTAS,
    STEP_SECONDS,
    THROTTLE_BACKOFF_BASE_SECONDS,
    THROTTLE_BACKOFF_CAP_SECONDS,
    THROTTLE_BACKOFF_SCHEDULE,
    THROTTLE_STORM_SECONDS,
    TRANSIENT_RECEIVES,
    UNPLANNED_MAX_RECEIVE_COUNT,
    WORKER_OWN_SECONDS,
    WORKER_SECONDS_PER_MESSAGE,
    CapacityError,
    CapacityPlan,
    Quota,
    StageCapacity,
    check_express_time,
    quota,
    receives_to_ride_out,
    stage_capacity,
    throttle_backoff_seconds,
    visibility_timeout_seconds,
    worker_timeout_seconds,
)
from reliability.cdk.config import WorkflowType
from reliability.cdk.windows import EXPRESS_TIME_LIMIT_SECONDS

__all__ = [
    "BATCH_SIZE",
    "BATCH_WINDOW_SECONDS",
    "EXPRESS_EXECUTION_TIMEOUT_SECONDS",
    "EXPRESS_TIME_LIMIT_SECONDS",
    "HEADROOM",
    "MAX_RECEIVE_COUNT",
    "PROVIDER_CALL_SECONDS",
    "QUOTAS",
    "STEP_SECONDS",
    "THROTTLE_BACKOFF_BASE_SECONDS",
    "THROTTLE_BACKOFF_CAP_SECONDS",
    "THROTTLE_BACKOFF_SCHEDULE",
    "THROTTLE_STORM_SECONDS",
    "TRANSACTIONAL_WRU_PER_ITEM",
    "TRANSIENT_RECEIVES",
    "TRANSITIONS_PER_ORDER",
    "UNPLANNED_MAX_RECEIVE_COUNT",
    "WORKER_OWN_SECONDS",
    "WORKER_SECONDS_PER_MESSAGE",
    "CapacityError",
    "CapacityPlan",
    "Quota",
    "StageCapacity",
    "check_express_time",
    "downstream_limits",
    "express_execution_seconds",
    "own_limits",
    "plan",
    "quota",
    "receives_to_ride_out",
    "stage_capacity",
    "throttle_backoff_seconds",
    "visibility_timeout_seconds",
    "worker_seconds_per_message",
    "worker_timeout_seconds",
]

# A happy-path execution enters this many states (its tasks + Succeed); each is one state
# transition. tests/infra/test_capacity.py pins it to the synthesized state machine.
TRANSITIONS_PER_ORDER = _library.transitions_per_run(manifest.service())
# The analytics consumer adds every event to one item per day (`day#<date>`/`total`) in a
# transaction: 2 write units per item of up to 1 KB, so that item takes at most 500 events/s.
TRANSACTIONAL_WRU_PER_ITEM = 2


def own_limits() -> dict[str, float]:
    """The sample's own downstream limit, in orders a second."""
    return {
        "DynamoDB partition write limit (the daily aggregate item)": quota("dynamodb_partition_wcu")
        / TRANSACTIONAL_WRU_PER_ITEM
    }


def downstream_limits(capacity: StageCapacity) -> dict[str, float]:
    """Orders a second each downstream limit allows (before headroom)."""
    return _library.downstream_limits(manifest.declaration(), capacity, own_limits())


def express_execution_seconds() -> float:
    return _library.express_execution_seconds(manifest.declaration())


def worker_seconds_per_message(workflow: WorkflowType) -> float:
    return _library.worker_seconds_per_message(manifest.declaration(), workflow)


def plan(capacity: StageCapacity, workflow: WorkflowType = WorkflowType.STANDARD) -> CapacityPlan:
    """The library's plan for the orders declaration (reliability.cdk.capacity.plan)."""
    return _library.plan(manifest.declaration(), capacity, workflow, own_limits=own_limits())
