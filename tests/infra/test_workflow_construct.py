"""FencedWorkflow refuses a step graph it could not turn into the intended state machine."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_

from infra.constructs.workflow import FencedWorkflow, StepSpec


@pytest.fixture(scope="module")
def function() -> lambda_.IFunction:
    stack = Stack(App(), "Functions")
    return lambda_.Function.from_function_arn(stack, "Fn", "arn:aws:lambda:us-east-1:123456789012:function:f")


def _build(steps: list[StepSpec]) -> None:
    FencedWorkflow(Stack(App(), "S"), "Flow", state_machine_name="s-dev-flow", steps=steps, retain_logs=False)


def test_a_valid_graph_builds(function: lambda_.IFunction) -> None:
    _build(
        [
            StepSpec(name="A", function=function, next="B", catch={"C": ["Boom"]}),
            StepSpec(name="B", function=function, next=None),
            StepSpec(name="C", function=function, next=None),
        ]
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
def test_an_invalid_graph_is_refused(function: lambda_.IFunction, steps: list[tuple], message: str) -> None:
    specs = [StepSpec(name=name, function=function, next=nxt, catch=catch) for name, nxt, catch in steps]
    with pytest.raises(ValueError, match=message):
        _build(specs)
