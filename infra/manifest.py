"""The service's steps and consumers, read as data from `functions/orders/workflow.py`.

That module is the one declaration of each capability (see its docstring); the library's
`reliability.cdk.declared` loads it by path (infra never imports runtime code) and checks it at
synth. This module binds the two to the sample: where its declaration and handlers are.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

from reliability.cdk import declared
from reliability.cdk.declared import ManifestError as ManifestError  # noqa: PLC0414
from reliability.declaration import Service, queue_env, table_env

FUNCTIONS_DIR = Path(__file__).resolve().parents[1] / "functions"
WORKFLOW_MODULE = FUNCTIONS_DIR / "orders" / "workflow.py"
# The sample's handler modules (functions/orders/handlers/), one per kind of function.
HANDLER_PACKAGE = "orders.handlers"
STEP_HANDLER = f"{HANDLER_PACKAGE}.steps.handler"
CONSUMER_HANDLER = f"{HANDLER_PACKAGE}.consumers.handler"

__all__ = ["ManifestError", "check", "consumers", "queue_env", "service", "steps", "table_env"]


@cache
def service() -> Service:
    """The sample's declaration, `SERVICE` of functions/orders/workflow.py."""
    return declared.load_service(WORKFLOW_MODULE)


def steps() -> tuple[Any, ...]:
    return service().steps


def consumers() -> tuple[Any, ...]:
    return service().consumers


def declaration() -> Service:
    """The declaration with the steps and consumers these functions answer (tests replace them)."""
    return dataclasses.replace(service(), steps=steps(), consumers=consumers())


def provider_steps() -> tuple[Any, ...]:
    return declared.provider_steps(declaration())


def step_function(step: Any) -> str:
    """`ReserveInventory` -> `reserve-inventory`."""
    return declared.step_function(step)


def happy_path() -> tuple[str, ...]:
    return declaration().happy_path()


def next_of(step: Any) -> str | None:
    return declaration().next_of(step)


def check(reserved_functions: set[str]) -> None:
    """Every problem of every entry at once; `reserved_functions` are the other functions' names."""
    declared.check(
        declaration(),
        code_root=FUNCTIONS_DIR,
        reserved_functions=reserved_functions,
        source=str(WORKFLOW_MODULE.relative_to(FUNCTIONS_DIR.parent)),
    )
