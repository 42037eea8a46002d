"""retrysafe's reliability layer.

Keys, HTTP idempotency, consumer dedup, step fences, fault hook points, telemetry, the
declaration a service writes of its capabilities (`reliability.declaration`), the runner of its
fenced steps (`reliability.saga`) and its event consumer (`reliability.consumers`). The test
seams (crash plans, simulated crashes) are `reliability.testing`, which production code never
imports.

No aws_cdk imports; every AWS client is injected. See the module docstrings for the contracts.

Every name below is importable from `reliability` but loaded on first use (PEP 562), so a function
that uses the step fences does not pay for the batch or HTTP-idempotency utilities it never uses
(cold start, bench/coldstart.py). The whole public API is the list below, on one screen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reliability.batch import DeadLetters, parse_body, process_batch
    from reliability.calltoken import CallToken, with_attempt
    from reliability.consumers import EventConsumer
    from reliability.declaration import Consumer, Entity, Item, Route, Service, Step, StepStatus
    from reliability.dedup import ConsumerDedup
    from reliability.effects import AtomicEffect, ExternalEffect, RecordOn, Write
    from reliability.errors import (
        BusinessError,
        EffectConditionFailed,
        ExternalKeyExpired,
        FenceBusy,
        PoisonMessage,
        ReliabilityError,
        ResultTooLarge,
        RetryableError,
        StaleFence,
        StoreError,
        TransientError,
        store_error,
        transient_errors,
    )
    from reliability.faults import FaultPlan, active_plan, crash_point, instrument
    from reliability.http import HttpIdempotency, HttpResponse, error_response, header_value
    from reliability.keys import Fact, Key, canonical_json, derive_key, execution_token
    from reliability.record import TRANSITIONS, Claim, FenceEvent, FenceRecord, FenceState, Outcome, StepId
    from reliability.runs import FenceStore
    from reliability.saga import Saga, StepRequest, WorkflowRun
    from reliability.telemetry import Decision, Telemetry, metrics_per_invocation

# Each public name and the submodule that defines it.
_SOURCES = {
    "TRANSITIONS": "record",
    "AtomicEffect": "effects",
    "BusinessError": "errors",
    "CallToken": "calltoken",
    "Claim": "record",
    "Consumer": "declaration",
    "ConsumerDedup": "dedup",
    "DeadLetters": "batch",
    "Entity": "declaration",
    "Decision": "telemetry",
    "EffectConditionFailed": "errors",
    "EventConsumer": "consumers",
    "ExternalEffect": "effects",
    "ExternalKeyExpired": "errors",
    "FaultPlan": "faults",
    "Fact": "keys",
    "FenceBusy": "errors",
    "FenceEvent": "record",
    "FenceRecord": "record",
    "FenceState": "record",
    "FenceStore": "runs",
    "HttpIdempotency": "http",
    "HttpResponse": "http",
    "Item": "declaration",
    "Key": "keys",
    "Outcome": "record",
    "PoisonMessage": "errors",
    "ReliabilityError": "errors",
    "RetrySafeLockWrites": "http",
    "ResultTooLarge": "errors",
    "RetryableError": "errors",
    "Route": "declaration",
    "Service": "declaration",
    "StaleFence": "errors",
    "Step": "declaration",
    "StepId": "record",
    "StoreError": "errors",
    "Telemetry": "telemetry",
    "TransientError": "errors",
    "RecordOn": "effects",
    "Saga": "saga",
    "StepRequest": "saga",
    "StepStatus": "declaration",
    "WorkflowRun": "saga",
    "Write": "effects",
    "active_plan": "faults",
    "canonical_json": "keys",
    "crash_point": "faults",
    "derive_key": "keys",
    "error_response": "http",
    "execution_token": "keys",
    "header_value": "http",
    "instrument": "faults",
    "parse_body": "batch",
    "process_batch": "batch",
    "store_error": "errors",
    "transient_errors": "errors",
    "metrics_per_invocation": "telemetry",
    "with_attempt": "calltoken",
}

__all__ = [
    "TRANSITIONS",
    "AtomicEffect",
    "BusinessError",
    "CallToken",
    "Claim",
    "Consumer",
    "ConsumerDedup",
    "DeadLetters",
    "Decision",
    "EffectConditionFailed",
    "Entity",
    "EventConsumer",
    "ExternalEffect",
    "ExternalKeyExpired",
    "Fact",
    "FaultPlan",
    "FenceBusy",
    "FenceEvent",
    "FenceRecord",
    "FenceState",
    "FenceStore",
    "HttpIdempotency",
    "HttpResponse",
    "Item",
    "Key",
    "Outcome",
    "PoisonMessage",
    "RecordOn",
    "ReliabilityError",
    "ResultTooLarge",
    "RetrySafeLockWrites",
    "RetryableError",
    "Route",
    "Saga",
    "Service",
    "StaleFence",
    "Step",
    "StepId",
    "StepRequest",
    "StepStatus",
    "StoreError",
    "Telemetry",
    "TransientError",
    "WorkflowRun",
    "Write",
    "active_plan",
    "canonical_json",
    "crash_point",
    "derive_key",
    "error_response",
    "execution_token",
    "header_value",
    "instrument",
    "metrics_per_invocation",
    "parse_body",
    "process_batch",
    "store_error",
    "transient_errors",
    "with_attempt",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'reliability' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reliability.{module}"), name)
