"""Infra and functions cannot drift: every function's synthesized Environment is one its cold start
accepts (`orders.config.Settings.from_env`), and a step or consumer whose template lost any table or
queue variable fails its cold start naming that variable. Iterates the template, not a hand list."""

from __future__ import annotations

from typing import Any

import pytest

from orders import workflow
from orders.config import InvalidSettings, Settings

RESOURCE_SUFFIXES = ("_TABLE", "_QUEUE_URL", "_DLQ_URL")


def _environments(template: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each function's environment by its STEP_NAME/CONSUMER_NAME or function name; a value that is
    a deploy-time token (an import, a Ref) stands in as a placeholder string."""
    envs = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        raw = resource["Properties"]["Environment"]["Variables"]
        env = {name: value if isinstance(value, str) else "resolved-at-deploy" for name, value in raw.items()}
        envs[resource["Properties"]["FunctionName"]] = env
    return envs


def test_every_function_environment_passes_its_cold_start(dev_app_json: dict[str, Any]) -> None:
    envs = _environments(dev_app_json)
    assert len(envs) == 3 + len(workflow.STEPS) + len(workflow.CONSUMERS)
    for name, env in envs.items():
        settings = Settings.from_env(env)
        assert settings.stage == "dev", name


def test_a_step_or_consumer_missing_any_declared_resource_fails_its_cold_start(
    dev_app_json: dict[str, Any],
) -> None:
    entries = [
        env for env in _environments(dev_app_json).values() if "STEP_NAME" in env or "CONSUMER_NAME" in env
    ]
    assert len(entries) == len(workflow.STEPS) + len(workflow.CONSUMERS)
    for env in entries:
        for variable in [v for v in env if v.endswith(RESOURCE_SUFFIXES)]:
            without = {k: v for k, v in env.items() if k != variable}
            with pytest.raises(InvalidSettings, match=variable):
                Settings.from_env(without)
