"""Every line a saga step logs names its step and its entity, a line of the service's own effect
too (not only the fences' decisions, whose telemetry binds the entity itself): the step handler
appends both keys to the service's logger for the invocation."""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass, field
from typing import Any

import two_step_service
from aws_lambda_powertools import Metrics

from reliability.effects import AtomicEffect
from reliability.handlers import step_handler
from reliability.observability import logger
from reliability.saga import Saga, StepRequest
from reliability.telemetry import Telemetry
from reliability_helpers import FakeClock, fence_store, read_emitted


def logged_hold(
    ctx: two_step_service.Desk, terms: two_step_service.Terms, request: StepRequest
) -> AtomicEffect:
    """The service's hold, saying what it holds on the service's logger, as an effect may."""
    logger.info("holding seats", extra={"seats": terms.seats})
    return two_step_service.hold(ctx, terms, request)


SERVICE = dataclasses.replace(
    two_step_service.SERVICE,
    steps=tuple(
        dataclasses.replace(step, effect=f"{__name__}:logged_hold") if step.name == "Hold" else step
        for step in two_step_service.SERVICE.steps
    ),
)


@dataclass
class Context:
    function_name: str = "visits-hold"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:visits-hold"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@dataclass
class StepSettings:
    step_name: str


@dataclass
class StepRuntime:
    settings: StepSettings
    fence_store: Any
    saga: two_step_service.Desk = field(default_factory=two_step_service.Desk)

    def fences(self, namespace: str) -> Any:
        return self.fence_store


def test_the_effects_own_line_names_the_step_and_the_entity(ddb: Any) -> None:
    stream = io.StringIO()
    handler: Any = logger.registered_handler  # swapped by hand, as test_handlers explains
    previous, handler.stream = handler.stream, stream
    try:
        telemetry = Telemetry(logger=logger, metrics=Metrics(namespace="visits", service="visits"))
        runtime = StepRuntime(
            StepSettings("Hold"), fence_store(ddb, telemetry, FakeClock(), ttl_seconds=3600)
        )
        saga: Saga[two_step_service.Desk, two_step_service.Terms] = Saga(
            SERVICE, two_step_service.run_of, tables=lambda desk: desk.tables
        )
        step = step_handler(runtime=lambda: runtime, saga=saga)
        step({"visit_id": "v-7", "token": "dev.v-7.r1", "seats": 2, "results": {}}, Context())  # type: ignore[arg-type]
    finally:
        handler.stream = previous
        logger.remove_keys(["step", "entity_id"])
    [line] = [line for line in read_emitted(stream.getvalue()).logs if line["message"] == "holding seats"]
    assert (line["step"], line["entity_id"], line["seats"]) == ("Hold", "v-7", 2)
