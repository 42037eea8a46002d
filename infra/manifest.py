"""The service's steps and consumers, read as data from `functions/orders/workflow.py`.

That module is the one declaration of each capability (see its docstring). It imports only the
standard library, so infra loads it by path without importing runtime code, the way
infra/constructs/api.py reads `openapi.json`. `check()` runs at synth: an incomplete or
inconsistent entry fails the synth with a message that names what is missing.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

FUNCTIONS_DIR = Path(__file__).resolve().parents[1] / "functions"
WORKFLOW_MODULE = FUNCTIONS_DIR / "orders" / "workflow.py"
STEP_HANDLER = "orders.handlers.steps.handler"
CONSUMER_HANDLER = "orders.handlers.consumers.handler"
_NOT_A_FUNCTION = "is not a top-level function 'module:function' under functions/"


class ManifestError(ValueError):
    """An entry of orders.workflow is incomplete or inconsistent."""


@cache
def workflow() -> ModuleType:
    """functions/orders/workflow.py as a module of its own (not `orders.workflow`: infra never puts
    the asset root on its path)."""
    spec = importlib.util.spec_from_file_location("_orders_workflow_manifest", WORKFLOW_MODULE)
    if spec is None or spec.loader is None:
        raise ManifestError(f"cannot load {WORKFLOW_MODULE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module while the class is built
    spec.loader.exec_module(module)
    return module


def steps() -> tuple[Any, ...]:
    return tuple(workflow().STEPS)


def consumers() -> tuple[Any, ...]:
    return tuple(workflow().CONSUMERS)


def provider_steps() -> tuple[Any, ...]:
    """The steps that call an external provider: leased steps the declaration gives a `reconcile`
    (the provider keeps its own idempotency keys and can be asked what an attempt did). The
    capacity plan caps each one's concurrency under the provider's rate limit."""
    return tuple(step for step in steps() if step.kind == "leased" and step.reconcile is not None)


def step_function(step: Any) -> str:
    """`ReserveInventory` -> `reserve-inventory`."""
    return str(workflow().function_name(step.name))


def table_env(table: str) -> str:
    """`orders` -> ORDERS_TABLE, `fences` -> FENCE_TABLE (what orders.config reads)."""
    return str(workflow().table_env(table))


def queue_env(queue: str) -> str:
    """`notify` -> NOTIFY_QUEUE_URL, `notify-dlq` -> NOTIFY_DLQ_URL (what orders.config reads)."""
    return str(workflow().queue_env(queue))


def happy_path() -> tuple[str, ...]:
    return tuple(workflow().happy_path())


def next_of(step: Any) -> str | None:
    result = workflow().next_of(step)
    return None if result is None else str(result)


def _defined(path: str) -> bool:
    """True when `module:function` names a top-level function of a module under functions/
    (read by parsing the source: infra never imports the effects)."""
    module, sep, attribute = path.partition(":")
    source = FUNCTIONS_DIR.joinpath(*module.split(".")).with_suffix(".py")
    if not sep or not source.is_file():
        return False
    tree = ast.parse(source.read_text(), filename=str(source))
    return any(isinstance(node, ast.FunctionDef) and node.name == attribute for node in tree.body)


def _problems_of_step(
    step: Any, names: set[str], tables: frozenset[str], events: str, entity_table: str
) -> list[str]:
    where = f"step {step.name or '<no name>'}"
    problems = []
    if not step.name or not step.name[0].isupper() or not step.name.isalnum():
        problems.append(f"{where}: name must be a PascalCase state name")
    if step.kind not in ("atomic", "leased"):
        problems.append(f"{where}: kind must be 'atomic' or 'leased', not {step.kind!r}")
    if not _defined(step.effect):
        problems.append(
            f"{where}: effect {step.effect!r} is not a function 'module:function' under functions/"
        )
    if step.reconcile is not None and (step.kind != "leased" or not _defined(step.reconcile)):
        problems.append(f"{where}: reconcile {step.reconcile!r} must be a function of a leased step")
    if not step.description:
        problems.append(f"{where}: a description is missing")
    if unknown := [p for p in step.ports if p not in tables and p != events]:
        problems.append(f"{where}: unknown ports {unknown} (tables {sorted(tables)} or {events!r})")
    if step.timeout_seconds <= 0:
        problems.append(f"{where}: timeout_seconds must be positive (it is the fence lease)")
    return problems + _problems_of_effect(step, entity_table) + _problems_of_routes(step, names)


def _problems_of_effect(step: Any, entity_table: str) -> list[str]:
    """The declared effect agrees with the step's grants: the lab's invariants and tools read
    `writes`, `record`, `provider` and `status`, the IAM policy reads `ports`."""
    where = f"step {step.name or '<no name>'}"
    problems = []
    if unported := sorted({item.table for item in step.writes} - set(step.ports)):
        problems.append(f"{where}: writes items of {unported}, which are not among its ports")
    if step.record is not None and (step.kind != "atomic" or step.record not in step.writes):
        problems.append(f"{where}: record {step.record} must be an item its (atomic) effect writes")
    if step.kind == "leased" and step.provider not in step.ports:
        problems.append(f"{where}: a leased step names its provider, one of its ports {list(step.ports)}")
    if step.kind == "atomic" and step.provider is not None:
        problems.append(f"{where}: provider {step.provider!r} is for a leased step's external call")
    if step.status is not None and entity_table not in step.ports:
        problems.append(f"{where}: sets the status, so its ports name the {entity_table!r} table")
    return problems


def _problems_of_routes(step: Any, names: set[str]) -> list[str]:
    where = f"step {step.name}"
    problems = []
    try:
        target = next_of(step)
    except ValueError as error:
        problems.append(f"{where}: {error}")
    else:
        if target is not None and target not in names:
            problems.append(f"{where}: next {target!r} is not a step")
    for target, errors in step.catch.items():
        if target not in names:
            problems.append(f"{where}: catch routes to {target!r}, which is not a step")
        if not errors:
            problems.append(f"{where}: catch to {target!r} names no error")
    return problems


def _problems_of_consumer(consumer: Any, tables: frozenset[str]) -> list[str]:
    where = f"consumer {consumer.name or '<no name>'}"
    problems = []
    if not consumer.name or not consumer.name.replace("-", "").isalpha() or not consumer.name.islower():
        problems.append(f"{where}: name must be lowercase letters and '-' (its queue and function name)")
    if not _defined(consumer.effect):
        problems.append(
            f"{where}: effect {consumer.effect!r} is not a function 'module:function' under functions/"
        )
    if not consumer.description:
        problems.append(f"{where}: a description is missing")
    if not consumer.tables:
        problems.append(f"{where}: tables is missing (what does it write?)")
    if unknown := [t for t in consumer.tables if t not in tables]:
        problems.append(f"{where}: unknown tables {unknown} (known: {sorted(tables)})")
    if unported := sorted({item.table for item in consumer.writes} - set(consumer.tables)):
        problems.append(f"{where}: writes items of {unported}, which are not among its tables")
    if consumer.timeout_seconds <= 0:
        problems.append(f"{where}: timeout_seconds must be positive")
    return problems


def check(reserved_functions: set[str]) -> None:
    """Every problem of every entry at once; `reserved_functions` are the other functions' names."""
    module = workflow()
    names = {step.name for step in steps()}
    problems = []
    if len(names) != len(steps()):
        problems.append("two steps share a name")
    for step in steps():
        problems += _problems_of_step(step, names, module.TABLES, module.EVENTS, module.SERVICE.entity.table)
    consumer_names = [c.name for c in consumers()]
    if len(set(consumer_names)) != len(consumer_names):
        problems.append("two consumers share a name")
    for consumer in consumers():
        problems += _problems_of_consumer(consumer, module.TABLES)
    taken = reserved_functions & ({step_function(s) for s in steps()} | set(consumer_names))
    if taken:
        problems.append(f"function names {sorted(taken)} are already taken")
    if problems:
        raise ManifestError(
            f"{WORKFLOW_MODULE.relative_to(FUNCTIONS_DIR.parent)}:\n- " + "\n- ".join(problems)
        )
