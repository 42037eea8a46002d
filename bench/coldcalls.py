"""The AWS calls of each function's first invocation, recorded on the in-process cloud for
bench/coldstart.py to replay.

The sample events run through the real handlers on moto (`simulator.cloud.running_cloud`, the
`local` stage) in the order events/README.md gives, so each recorded invocation takes the path a
real first request takes (a new order, its first message, its first steps, its event, a sweep).
Each function's first invocation builds its runtime (and so its clients) afresh, as a cold start
does; every client it builds is one of `orders.runtime`'s configurations (`CLIENT_CONFIG`, or
`WAITING_CLIENT_CONFIG` for the client an Express run waits on), and every call it makes is
recorded with its parameters and moto's raw HTTP answer (status, headers, body), so a replay runs
botocore's whole client path (serialization, signing, parsing) and only the send is skipped.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore import xform_name

from ops.roles import provider_step
from ops.service import service
from reliability.cdk.declared import pascal
from reliability.declaration import function_name

# The configurations a function's clients are built with, by their name in orders.runtime.
CONFIGS = ("CLIENT_CONFIG", "WAITING_CLIENT_CONFIG")


@dataclass
class FirstInvocation:
    """One function's first invocation: what a fresh interpreter needs to run it again, offline."""

    module: str  # the handler module (`orders.handlers.steps`)
    function_name: str  # the physical function name (AWS_LAMBDA_FUNCTION_NAME)
    timeout: int
    environment: dict[str, str]
    event: Any
    # (client service name, configuration name in CONFIGS, client method, parameters), in order
    calls: list[tuple[str, str, str, Any]] = field(default_factory=list)
    # (operation, HTTP status, headers, body) of every HTTP answer, retries included, in order
    answers: list[tuple[str, int, dict[str, str], bytes]] = field(default_factory=list)
    result: Any = None

    def to_marshal(self) -> dict[str, Any]:
        """Plain data for `marshal` (the probe reads it before its clock starts, with no import)."""
        return {
            "module": self.module,
            "function_name": self.function_name,
            "timeout": self.timeout,
            "environment": dict(self.environment),
            "event": self.event,
            "calls": [list(call) for call in self.calls],
            "answers": [list(answer) for answer in self.answers],
            "outcome": outcome(self.result),
        }


def outcome(result: Any) -> Any:
    """What a replay must reproduce of an invocation's result: an HTTP status, the number of
    failed batch items, or (anything else) that it returned at all."""
    if isinstance(result, dict) and "statusCode" in result:
        return ["status", result["statusCode"]]
    if isinstance(result, dict) and "batchItemFailures" in result:
        return ["batch item failures", len(result["batchItemFailures"])]
    return ["returned", None]


def _event(path: str) -> dict[str, Any]:
    from simulator.cloud import EVENTS_DIR  # noqa: PLC0415 - the simulator only where it records

    event: dict[str, Any] = json.loads((EVENTS_DIR / path).read_text())
    return event


def _first_record(path: str) -> dict[str, Any]:
    """A batch sample's first record alone: a first invocation carries one new message, not the
    sample's redelivery and poison record (those show the dedup and the DLQ, not a cold start)."""
    event = _event(path)
    return {**event, "Records": event["Records"][:1]}


def record(assembly: Path) -> dict[str, FirstInvocation]:
    """Each function's first invocation, by its output prefix (`Api`, `HoldSeat`)."""
    from orders import runtime as orders_runtime  # noqa: PLC0415 - the simulator only where it records
    from simulator.cloud import REGION, InProcessCloud, running_cloud  # noqa: PLC0415

    recorded: dict[str, FirstInvocation] = {}
    recording: dict[str, FirstInvocation] = {}  # the invocation running, by function name
    configs = {name: getattr(orders_runtime, name) for name in CONFIGS}

    def factory(function_name: str, config_name: str) -> Callable[[str], Any]:
        """Clients as the function builds theirs, each call recorded for its invocation running."""

        def build(service: str) -> Any:
            client = boto3.client(service, region_name=REGION, config=configs[config_name])
            _attach(client, service, config_name, lambda: recording.get(function_name))
            return client

        return build

    def first(cloud: InProcessCloud, prefix: str, event: dict[str, Any]) -> Any:
        name = cloud.function(prefix)
        spec = cloud.functions[name]
        # A runtime of its own, built afresh: its clients are built by this invocation, as cold.
        settings = cloud.runtime_for(name).settings
        with cloud._lock:
            cloud._runtimes[name] = orders_runtime.Runtime(
                settings,
                client_factory=factory(name, "CLIENT_CONFIG"),
                waiting_client_factory=factory(name, "WAITING_CLIENT_CONFIG"),
                clock=cloud.clock,
            )
        invocation = FirstInvocation(
            module=spec.handler.rpartition(".")[0],
            function_name=name,
            timeout=spec.timeout,
            environment={**spec.environment, "AWS_LAMBDA_FUNCTION_NAME": name},
            event=copy.deepcopy(event),
        )
        recording[name] = invocation
        try:
            invocation.result = cloud.call(name, event)
        finally:
            del recording[name]
        recorded[prefix] = invocation
        return invocation.result

    with running_cloud(assembly) as cloud:
        first(cloud, "Api", _event("api/create_order.json"))
        first(cloud, "Worker", _event("worker/single.json"))
        declared = service()
        provider, answer = provider_step(declared), None
        for step in declared.happy_path():
            event = _event(f"{function_name(step)}/fresh.json")
            # The samples carry a placeholder of the provider's answer; the chain carries the real one
            if provider is not None and answer is not None:
                event["results"][provider.name] = answer
            result = first(cloud, step, event)
            answer = result if provider is not None and step == provider.name else answer
        for consumer in declared.consumers[:1]:  # one consumer's cold start stands for each
            first(cloud, pascal(consumer.name), _first_record(f"{consumer.name}/batch.json"))
        first(cloud, "SweepAccepted", _event("sweep-accepted/scheduled.json"))
    return recorded


def _attach(client: Any, service: str, config_name: str, invocation: Any) -> None:
    """Record the client's calls and raw answers into the invocation `invocation()` names."""

    def before(model: Any, params: Any, **_: Any) -> None:
        running = invocation()
        if running is not None:
            running.calls.append((service, config_name, xform_name(model.name), copy.deepcopy(params)))

    def received(response_dict: Any, event_name: str, **_: Any) -> None:
        running = invocation()
        if running is not None and response_dict is not None:
            headers = {str(k): str(v) for k, v in response_dict["headers"].items()}
            status, body = int(response_dict["status_code"]), response_dict["body"]
            running.answers.append((event_name.rpartition(".")[2], status, headers, body))

    client.meta.events.register_first("before-parameter-build", before)
    client.meta.events.register("response-received", received)
