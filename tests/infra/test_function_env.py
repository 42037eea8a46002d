"""Infra and functions cannot drift: every function's synthesized Environment is one its cold start
accepts as its handler's settings class (`orders.config.settings_of`), and a function whose template
lost any table or queue variable fails its cold start naming that variable. Iterates the template,
not a hand list."""

from __future__ import annotations

from typing import Any

import pytest

from orders import workflow
from orders.config import ConsumerSettings, InvalidSettings, StepSettings, settings_of

RESOURCE_SUFFIXES = ("_TABLE", "_QUEUE_URL", "_DLQ_URL")


def _functions(template: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """Each function's handler and environment as Lambda gives it (AWS_LAMBDA_FUNCTION_NAME added); a
    value that is a deploy-time token (an import, a Ref) stands in as a placeholder string."""
    functions = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        props = resource["Properties"]
        raw = props["Environment"]["Variables"]
        env = {name: value if isinstance(value, str) else "resolved-at-deploy" for name, value in raw.items()}
        env["AWS_LAMBDA_FUNCTION_NAME"] = props["FunctionName"]
        functions[props["FunctionName"]] = (props["Handler"], env)
    return functions


def test_every_function_environment_passes_its_cold_start(dev_app_json: dict[str, Any]) -> None:
    functions = _functions(dev_app_json)
    assert len(functions) == 3 + len(workflow.STEPS) + len(workflow.CONSUMERS)
    kinds = []
    for name, (handler, env) in functions.items():
        settings = settings_of(handler).from_env(env)
        assert settings.stage == "dev", name
        # the kind is given exactly the tables and queues the template grants it, no more
        granted = {v for v in env if v.endswith(RESOURCE_SUFFIXES)}
        assert len(settings.tables) + len(settings.queues) == len(granted), name
        kinds.append(type(settings))
    assert kinds.count(StepSettings) == len(workflow.STEPS)
    assert kinds.count(ConsumerSettings) == len(workflow.CONSUMERS)


def test_a_function_missing_any_resource_variable_fails_its_cold_start(dev_app_json: dict[str, Any]) -> None:
    for handler, env in _functions(dev_app_json).values():
        for variable in [v for v in env if v.endswith(RESOURCE_SUFFIXES)]:
            without = {k: v for k, v in env.items() if k != variable}
            with pytest.raises(InvalidSettings, match=variable):
                settings_of(handler).from_env(without)
