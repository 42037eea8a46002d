"""FencedWorkflow refuses a step graph it could not turn into the intended state machine."""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_

from reliability.cdk.workflow import FencedWorkflow, StepSpec

STEP_TIMEOUT = Duration.seconds(20)


def _function(stack: Stack, *, timeout: Duration | None = STEP_TIMEOUT) -> lambda_.Function:
    return lambda_.Function(
        stack,
        f"Fn{len(stack.node.children)}",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): return event"),
        timeout=timeout,
    )


@pytest.fixture
def stack() -> Stack:
    return Stack(App(), "S")


@pytest.fixture
def function(stack: Stack) -> lambda_.Function:
    return _function(stack)


def _build(stack: Stack, steps: list[StepSpec]) -> None:
    FencedWorkflow(
        stack, "Flow", state_machine_name="s-dev-flow", steps=steps, retain_logs=False, log_key=None
    )


def test_a_step_without_a_timeout_has_no_lease_and_is_refused(stack: Stack) -> None:
    untimed = _function(stack, timeout=None)
    with pytest.raises(ValueError, match="explicit timeout"):
        _build(stack, [StepSpec(name="A", function=untimed, next=None)])


def test_a_valid_graph_builds(stack: Stack, function: lambda_.Function) -> None:
    _build(
        stack,
        [
            StepSpec(name="A", function=function, next="B", catch={"C": ["Boom"]}),
            StepSpec(name="B", function=function, next=None),
            StepSpec(name="C", function=function, next=None),
        ],
    )


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([], "non-empty"),
        ([("A", None, {}), ("A", None, {})], "unique"),
        ([("Done", None, {})], "unique"),
        ([("A", "B", {})], r"unknown steps \['B'\]"),
        ([("A", None, {"X": ["Boom"]})], r"unknown steps \['X'\]"),
        ([("A", None, {}), ("B", None, {})], r"\['B'\] cannot be reached"),
    ],
)
def test_an_invalid_graph_is_refused(
    stack: Stack, function: lambda_.Function, steps: list[tuple], message: str
) -> None:
    specs = [StepSpec(name=name, function=function, next=nxt, catch=catch) for name, nxt, catch in steps]
    with pytest.raises(ValueError, match=message):
        _build(stack, specs)
