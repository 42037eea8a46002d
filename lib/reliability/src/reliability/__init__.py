"""retrysafe's reliability layer.

Keys, HTTP idempotency, consumer dedup, step fences, fault hook points, telemetry, the
declaration a service writes of its capabilities (`reliability.declaration`), the runner of its
fenced steps (`reliability.saga`), its event consumer (`reliability.consumers`), its business
entity's runs (`reliability.workflow_runs`: the worker's one start per run, reruns, the sweep; the
entity table's run state, `reliability.run_store`; the SQS and Step Functions adapters), and the
Lambda handlers built from the declaration (`reliability.api`, `reliability.queue_handlers`,
`reliability.handlers`). The test seams (crash plans, simulated crashes) are
`reliability.testing`, which production code never imports.

No aws_cdk imports; every AWS client is injected. See the module docstrings for the contracts.

Every name below is importable from `reliability` but loaded on first use (PEP 562), so a function
that uses the step fences does not pay for the batch or HTTP-idempotency utilities it never uses
(cold start, bench/coldstart.py). The whole public API is the list below, on one screen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reliability.api import RestApi
    from reliability.batch import DeadLetters, parse_body, process_batch
    from reliability.calltoken import CallToken, with_attempt
    from reliability.consumers import EventConsumer
    from reliability.declaration import Consumer, Entity, Item, Route, Service, Step, StepStatus
    from reliability.dedup import ConsumerDedup
    from reliability.effects import AtomicEffect, ExternalEffect, RecordOn, Write
    from reliability.errors import (
        BusinessError,
        EffectConditionFailed,
        EntityNotFound,
        ExecutionConflict,
        ExecutionFailed,
        ExternalKeyExpired,
        FenceBusy,
        MalformedBody,
        PoisonMessage,
        ReliabilityError,
        RequestError,
        RerunRefused,
        ResultTooLarge,
        RetryableError,
        RunNotCurrent,
        StaleFence,
        StoreError,
        TransientError,
        UnknownEntity,
        store_error,
        transient_errors,
    )
    from reliability.faults import FaultPlan, active_plan, crash_point, instrument
    from reliability.handlers import step_handler, sweep_handler
    from reliability.http import HttpIdempotency, HttpResponse, error_response, header_value
    from reliability.keys import Fact, Key, canonical_json, derive_key, execution_token
    from reliability.queue_handlers import (
        StartExecutionThrottled,
        consumer_handler,
        sqs_handler,
        worker_handler,
    )
    from reliability.record import TRANSITIONS, Claim, FenceEvent, FenceRecord, FenceState, Outcome, StepId
    from reliability.run_store import DynamoRunStore
    from reliability.runs import FenceStore
    from reliability.saga import Saga, StepRequest, WorkflowRun
    from reliability.sqs import SqsQueue
    from reliability.stepfunctions import ExpressStepFunctionsWorkflow, StepFunctionsWorkflow
    from reliability.telemetry import Decision, Telemetry, metrics_per_invocation
    from reliability.workflow_runs import (
        EntityRun,
        ExecutionEnd,
        Reruns,
        RunMessage,
        RunMessages,
        RunStatus,
        RunStore,
        WorkflowStarter,
        execution_name,
    )

# Each public name and the submodule that defines it.
_SOURCES = {
    "AtomicEffect": "effects",
    "BusinessError": "errors",
    "CallToken": "calltoken",
    "Claim": "record",
    "Consumer": "declaration",
    "ConsumerDedup": "dedup",
    "DeadLetters": "batch",
    "Decision": "telemetry",
    "DynamoRunStore": "run_store",
    "EffectConditionFailed": "errors",
    "Entity": "declaration",
    "EntityNotFound": "errors",
    "EntityRun": "workflow_runs",
    "EventConsumer": "consumers",
    "ExecutionConflict": "errors",
    "ExecutionEnd": "workflow_runs",
    "ExecutionFailed": "errors",
    "ExpressStepFunctionsWorkflow": "stepfunctions",
    "ExternalEffect": "effects",
    "ExternalKeyExpired": "errors",
    "Fact": "keys",
    "FaultPlan": "faults",
    "FenceBusy": "errors",
    "FenceEvent": "record",
    "FenceRecord": "record",
    "FenceState": "record",
    "FenceStore": "runs",
    "HttpIdempotency": "http",
    "HttpResponse": "http",
    "Item": "declaration",
    "Key": "keys",
    "MalformedBody": "errors",
    "Outcome": "record",
    "PoisonMessage": "errors",
    "RecordOn": "effects",
    "ReliabilityError": "errors",
    "RequestError": "errors",
    "RerunRefused": "errors",
    "Reruns": "workflow_runs",
    "RestApi": "api",
    "ResultTooLarge": "errors",
    "RetrySafeLockWrites": "http",
    "RetryableError": "errors",
    "Route": "declaration",
    "RunMessage": "workflow_runs",
    "RunMessages": "workflow_runs",
    "RunNotCurrent": "errors",
    "RunStatus": "workflow_runs",
    "RunStore": "workflow_runs",
    "Saga": "saga",
    "Service": "declaration",
    "SqsQueue": "sqs",
    "StaleFence": "errors",
    "StartExecutionThrottled": "queue_handlers",
    "Step": "declaration",
    "StepFunctionsWorkflow": "stepfunctions",
    "StepId": "record",
    "StepRequest": "saga",
    "StepStatus": "declaration",
    "StoreError": "errors",
    "TRANSITIONS": "record",
    "Telemetry": "telemetry",
    "TransientError": "errors",
    "UnknownEntity": "errors",
    "WorkflowRun": "saga",
    "WorkflowStarter": "workflow_runs",
    "Write": "effects",
    "active_plan": "faults",
    "canonical_json": "keys",
    "consumer_handler": "queue_handlers",
    "crash_point": "faults",
    "derive_key": "keys",
    "error_response": "http",
    "execution_name": "workflow_runs",
    "execution_token": "keys",
    "header_value": "http",
    "instrument": "faults",
    "metrics_per_invocation": "telemetry",
    "parse_body": "batch",
    "process_batch": "batch",
    "sqs_handler": "queue_handlers",
    "step_handler": "handlers",
    "store_error": "errors",
    "sweep_handler": "handlers",
    "transient_errors": "errors",
    "with_attempt": "calltoken",
    "worker_handler": "queue_handlers",
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
    "DynamoRunStore",
    "EffectConditionFailed",
    "Entity",
    "EntityNotFound",
    "EntityRun",
    "EventConsumer",
    "ExecutionConflict",
    "ExecutionEnd",
    "ExecutionFailed",
    "ExpressStepFunctionsWorkflow",
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
    "MalformedBody",
    "Outcome",
    "PoisonMessage",
    "RecordOn",
    "ReliabilityError",
    "RequestError",
    "RerunRefused",
    "Reruns",
    "RestApi",
    "ResultTooLarge",
    "RetrySafeLockWrites",
    "RetryableError",
    "Route",
    "RunMessage",
    "RunMessages",
    "RunNotCurrent",
    "RunStatus",
    "RunStore",
    "Saga",
    "Service",
    "SqsQueue",
    "StaleFence",
    "StartExecutionThrottled",
    "Step",
    "StepFunctionsWorkflow",
    "StepId",
    "StepRequest",
    "StepStatus",
    "StoreError",
    "Telemetry",
    "TransientError",
    "UnknownEntity",
    "WorkflowRun",
    "WorkflowStarter",
    "Write",
    "active_plan",
    "canonical_json",
    "consumer_handler",
    "crash_point",
    "derive_key",
    "error_response",
    "execution_name",
    "execution_token",
    "header_value",
    "instrument",
    "metrics_per_invocation",
    "parse_body",
    "process_batch",
    "sqs_handler",
    "step_handler",
    "store_error",
    "sweep_handler",
    "transient_errors",
    "with_attempt",
    "worker_handler",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'reliability' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reliability.{module}"), name)
