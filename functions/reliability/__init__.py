"""retrysafe's reliability layer.

Keys, HTTP idempotency, consumer dedup, step fences, crash points, telemetry.

No aws_cdk imports; every AWS client is injected. See the module docstrings for the contracts.

Every name below is importable from `reliability` but loaded on first use (PEP 562), so a function
that imports `reliability.fence` does not pay for the batch or HTTP-idempotency utilities it never
uses (cold start, bench/coldstart.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each public name and the submodule that defines it.
_SOURCES = {
    "AtomicEffect": "fence",
    "BusinessError": "errors",
    "Claim": "fence",
    "ConfigError": "config",
    "ConsumerDedup": "batch",
    "CrashPlan": "crashpoints",
    "DeadLetters": "batch",
    "Decision": "telemetry",
    "EffectConditionFailed": "errors",
    "FenceBusy": "errors",
    "FenceEvent": "fence",
    "FenceRecord": "fence",
    "FenceState": "fence",
    "FenceStore": "fence",
    "HttpIdempotency": "http",
    "HttpResponse": "http",
    "Key": "keys",
    "Outcome": "fence",
    "PoisonMessage": "batch",
    "ReliabilityConfig": "config",
    "ReliabilityError": "errors",
    "ResultTooLarge": "errors",
    "RetryableError": "errors",
    "SimulatedCrash": "crashpoints",
    "StaleFence": "errors",
    "StepId": "fence",
    "StoreError": "errors",
    "TRANSITIONS": "fence",
    "Telemetry": "telemetry",
    "TransientError": "errors",
    "Write": "fence",
    "active_plan": "crashpoints",
    "canonical_json": "keys",
    "crash_point": "crashpoints",
    "derive_key": "keys",
    "error_response": "http",
    "execution_token": "keys",
    "header_value": "http",
    "instrument": "crashpoints",
    "load_config": "config",
    "parse_body": "batch",
    "process_batch": "batch",
    "store_error": "errors",
}

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


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'reliability' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reliability.{module}"), name)
