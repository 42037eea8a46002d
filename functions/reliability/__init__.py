"""retrysafe's reliability layer.

Keys, HTTP idempotency, consumer dedup, step fences, crash points, telemetry.

No aws_cdk imports; every AWS client is injected. See the module docstrings for the contracts.
"""

from reliability.batch import ConsumerDedup, DeadLetters, PoisonMessage, parse_body, process_batch
from reliability.config import ConfigError, ReliabilityConfig, load_config
from reliability.crashpoints import CrashPlan, SimulatedCrash, active_plan, crash_point, instrument
from reliability.errors import (
    BusinessError,
    EffectConditionFailed,
    FenceBusy,
    ReliabilityError,
    ResultTooLarge,
    RetryableError,
    StaleFence,
    StoreError,
    TransientError,
    store_error,
)
from reliability.fence import (
    TRANSITIONS,
    AtomicEffect,
    Claim,
    FenceEvent,
    FenceRecord,
    FenceState,
    FenceStore,
    Outcome,
    StepId,
    Write,
)
from reliability.http import HttpIdempotency, HttpResponse, error_response, header_value
from reliability.keys import Key, canonical_json, derive_key, execution_token
from reliability.telemetry import Decision, Telemetry

__all__ = [
    "TRANSITIONS",
    "AtomicEffect",
    "BusinessError",
    "Claim",
    "ConfigError",
    "ConsumerDedup",
    "CrashPlan",
    "DeadLetters",
    "Decision",
    "EffectConditionFailed",
    "FenceBusy",
    "FenceEvent",
    "FenceRecord",
    "FenceState",
    "FenceStore",
    "HttpIdempotency",
    "HttpResponse",
    "Key",
    "Outcome",
    "PoisonMessage",
    "ReliabilityConfig",
    "ReliabilityError",
    "ResultTooLarge",
    "RetryableError",
    "SimulatedCrash",
    "StaleFence",
    "StepId",
    "StoreError",
    "Telemetry",
    "TransientError",
    "Write",
    "active_plan",
    "canonical_json",
    "crash_point",
    "derive_key",
    "error_response",
    "execution_token",
    "header_value",
    "instrument",
    "load_config",
    "parse_body",
    "process_batch",
    "store_error",
]
