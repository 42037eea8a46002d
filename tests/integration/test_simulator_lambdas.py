"""The simulator calls a handler as a local cloud's worker does: with the Lambda context built from
the environment Lambda gives the function (`emulator.functions`, `emulator.lambda_runtime`), its
facts read from the template."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import types
from typing import Any

import pytest

from emulator.templates import resources_of_type
from simulator.cloud import InProcessCloud


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A handler module that records the context it is called with."""
    seen: dict[str, Any] = {}
    module = types.ModuleType("context_probe")

    def handler(event: Any, context: Any) -> dict[str, Any]:
        seen["context"] = context
        return {}

    module.handler = handler  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "context_probe", module)
    return seen


def test_a_handler_gets_the_context_lambda_would_give_it(
    cloud: InProcessCloud, probe: dict[str, Any]
) -> None:
    # Given the API function, its configuration in the template, and its handler swapped for the probe
    name = cloud.function("Api")
    (properties,) = (
        resource["Properties"]
        for resource in resources_of_type(cloud.app_template, "AWS::Lambda::Function").values()
        if resource["Properties"]["FunctionName"] == name
    )
    spec = cloud.functions[name]
    settings = importlib.import_module(spec.handler.rpartition(".")[0]).SETTINGS
    sys.modules["context_probe"].SETTINGS = settings  # type: ignore[attr-defined]
    cloud.functions[name] = dataclasses.replace(spec, handler="context_probe.handler")

    # When the simulator calls it
    cloud.call(name, {})

    # Then the context says what Lambda's would: the template's memory (a string, as the runtime
    # reads it from the environment), the function's ARN and log group, time left within its timeout
    context = probe["context"]
    assert context.function_name == name
    assert context.memory_limit_in_mb == str(properties["MemorySize"])
    assert context.invoked_function_arn.endswith(f":function:{name}")
    assert context.log_group_name == f"/aws/lambda/{name}"
    assert 0 < context.get_remaining_time_in_millis() <= properties["Timeout"] * 1000
