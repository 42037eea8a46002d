"""What the scale model runs: read from a synthesized assembly, never a copy of its numbers.

Queues (visibility timeout, maxReceiveCount), event source mappings (batch size, window,
MaximumConcurrency), functions (timeout, reserved concurrency, the worker's backoff schedule) and
the state machine (states, Retry, Catch) all come from the templates; the stage's capacity entry
(cdk.json) gives the account concurrency and the provider's rate limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.synth import cdk_context, load_template, stack_names
from emulator.templates import resources_of_type, state_machine_definition
from ops.service import service
from reliability.cdk.capacity import UNPLANNED_MAX_RECEIVE_COUNT, StageCapacity, stage_capacity
from reliability.cdk.config import CONTEXT_KEY


@dataclass(frozen=True)
class QueueSpec:
    name: str  # short name: the API's queue, then one per consumer (the sample's orders, ...)
    consumer: str  # function short name
    visibility_timeout: int
    max_receive_count: int
    batch_size: int
    batch_window: int
    max_concurrency: int | None  # ESM ScalingConfig.MaximumConcurrency; None = Lambda's own maximum


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # short name: api, worker, a step's function (its kebab-case name), a consumer
    timeout: int
    memory_mb: int
    reserved: int | None
    environment: Mapping[str, Any] = field(default_factory=dict)

    @property
    def backoff_schedule(self) -> tuple[int, ...]:
        raw = self.environment.get("THROTTLE_BACKOFF_SECONDS")
        return tuple(int(part) for part in str(raw).split(",")) if raw else ()


@dataclass(frozen=True)
class Topology:
    stage: str
    capacity: StageCapacity
    queues: Mapping[str, QueueSpec]
    functions: Mapping[str, FunctionSpec]
    # The ASL, each task's Resource replaced by its function's short name.
    workflow: Mapping[str, Any]
    # The API stage's throttle (cdk.json api_throttle rate): requests a second.
    api_rate: float
    # The state machine's type is EXPRESS (its StateMachineType), not STANDARD.
    express: bool = False

    def happy_path(self) -> list[str]:
        """The states a successful execution enters, StartAt along Next."""
        states, path, name = self.workflow["States"], [], self.workflow["StartAt"]
        while name is not None:
            path.append(name)
            name = states[name].get("Next")
        return path

    def task_function(self, state: str) -> str | None:
        resource = self.workflow["States"][state].get("Resource")
        return str(resource).rsplit(":", 1)[-1] if resource else None


def _short(function_name: str, stage: str) -> str:
    return function_name.removeprefix(f"retrysafe-{stage}-")


def read(assembly: Path, stage: str) -> Topology:
    """The topology of ``stage`` from its synthesized cloud assembly."""
    templates = {name: load_template(assembly, name) for name in stack_names(assembly)}
    data, app = templates[f"retrysafe-{stage}-data"], templates[f"retrysafe-{stage}-app"]
    functions: dict[str, FunctionSpec] = {}
    by_logical_id: dict[str, str] = {}
    for logical_id, resource in resources_of_type(app, "AWS::Lambda::Function").items():
        props = resource["Properties"]
        name = _short(str(props["FunctionName"]), stage)
        by_logical_id[logical_id] = name
        functions[name] = FunctionSpec(
            name=name,
            timeout=int(props["Timeout"]),
            memory_mb=int(props.get("MemorySize", 128)),
            reserved=props.get("ReservedConcurrentExecutions"),
            environment=dict(props.get("Environment", {}).get("Variables", {})),
        )
    raw_queues = {
        _short(str(q["Properties"]["QueueName"]), stage): q["Properties"]
        for q in resources_of_type(data, "AWS::SQS::Queue").values()
    }
    queues: dict[str, QueueSpec] = {}
    for mapping in resources_of_type(app, "AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        consumer = by_logical_id[props["FunctionName"]["Ref"]]
        # The mapping's source is an import of the data stack's queue ARN; its consumer names it.
        queue = {"worker": service().queue}.get(consumer, consumer)
        queue_props = raw_queues[queue]
        queues[queue] = QueueSpec(
            name=queue,
            consumer=consumer,
            visibility_timeout=int(queue_props["VisibilityTimeout"]),
            max_receive_count=int(queue_props["RedrivePolicy"]["maxReceiveCount"]),
            batch_size=int(props.get("BatchSize", 10)),
            batch_window=int(props.get("MaximumBatchingWindowInSeconds", 0)),
            max_concurrency=props.get("ScalingConfig", {}).get("MaximumConcurrency"),
        )
    workflow = state_machine_definition(app, {f"retrysafe-{stage}-{name}": name for name in functions})
    machines = resources_of_type(app, "AWS::StepFunctions::StateMachine").values()
    express = any(m["Properties"].get("StateMachineType") == "EXPRESS" for m in machines)
    context = cdk_context(stage)[CONTEXT_KEY]
    return Topology(
        stage=stage,
        capacity=stage_capacity(context, stage),
        queues=queues,
        functions=functions,
        workflow=workflow,
        api_rate=float(context["stages"][stage]["api_throttle"]["rate"]),
        express=express,
    )


def without_capacity(topology: Topology) -> Topology:
    """The mutant: the same templates without the capacity plan's settings (no ESM maximum, no
    reserved concurrency, no throttle backoff in the worker, the old 5 receives)."""
    queues = {
        name: dataclasses.replace(q, max_concurrency=None, max_receive_count=UNPLANNED_MAX_RECEIVE_COUNT)
        for name, q in topology.queues.items()
    }
    functions = {
        name: dataclasses.replace(
            f,
            reserved=None,
            environment={k: v for k, v in f.environment.items() if k != "THROTTLE_BACKOFF_SECONDS"},
        )
        for name, f in topology.functions.items()
    }
    return dataclasses.replace(topology, queues=queues, functions=functions)
