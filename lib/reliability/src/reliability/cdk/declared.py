"""A service's declaration read as data by its CDK app, and checked at synth.

The declaration (`reliability.declaration.Service`) imports only the standard library, so the CDK
app loads its module by path (`load_service`) without putting the Lambda asset root on its path or
importing runtime code. `check` runs at synth: an incomplete or inconsistent entry fails the synth
with a message naming every problem at once. Pure Python (no aws_cdk).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

from reliability.declaration import FENCES, Consumer, Service, Step, function_name

# The record table of HTTP idempotency and consumer dedup records; with the fence table (FENCES),
# the tables every service has besides those it declares.
IDEMPOTENCY = "idempotency"
RECORD_TABLES = (IDEMPOTENCY, FENCES)


class ManifestError(ValueError):
    """An entry of the service's declaration is incomplete or inconsistent."""


def load_service(module_path: Path, attribute: str = "SERVICE") -> Service:
    """The `Service` a declaration module defines, loaded from its file as a module of its own
    (not under its package name: the CDK app never puts the asset root on its path)."""
    name = f"_declaration_{module_path.stem}_{abs(hash(str(module_path)))}"
    spec = importlib.util.spec_from_file_location(name, module_path)
    if spec is None or spec.loader is None:
        raise ManifestError(f"cannot load {module_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module while the class is built
    spec.loader.exec_module(module)
    service = getattr(module, attribute, None)
    if not isinstance(service, Service):
        raise ManifestError(f"{module_path} defines no Service named {attribute!r}")
    return service


def pascal(name: str) -> str:
    """`hold-seat` -> `HoldSeat` (construct ids, output keys)."""
    return "".join(part.capitalize() for part in name.split("-"))


def step_function(step: Step) -> str:
    """A step's function name suffix: `HoldSeat` -> `hold-seat`."""
    return function_name(step.name)


def provider_steps(service: Service) -> tuple[Step, ...]:
    """The steps that call an external provider: leased steps the declaration gives a `reconcile`
    (the provider keeps its own idempotency keys and can be asked what an attempt did). The
    capacity plan caps each one's concurrency under the provider's rate limit."""
    return tuple(step for step in service.steps if step.kind == "leased" and step.reconcile is not None)


def _defined(code_root: Path, path: str) -> bool:
    """True when `module:function` names a top-level function of a module under `code_root`
    (read by parsing the source: the CDK app never imports the effects)."""
    module, sep, attribute = path.partition(":")
    source = code_root.joinpath(*module.split(".")).with_suffix(".py")
    if not sep or not source.is_file():
        return False
    tree = ast.parse(source.read_text(), filename=str(source))
    return any(isinstance(node, ast.FunctionDef) and node.name == attribute for node in tree.body)


def _problems_of_step(service: Service, step: Step, code_root: Path) -> list[str]:
    where = f"step {step.name or '<no name>'}"
    problems = []
    if not step.name or not step.name[0].isupper() or not step.name.isalnum():
        problems.append(f"{where}: name must be a PascalCase state name")
    if step.kind not in ("atomic", "leased"):
        problems.append(f"{where}: kind must be 'atomic' or 'leased', not {step.kind!r}")
    if not _defined(code_root, step.effect):
        problems.append(
            f"{where}: effect {step.effect!r} is not a function 'module:function' under {code_root.name}/"
        )
    if step.reconcile is not None and (step.kind != "leased" or not _defined(code_root, step.reconcile)):
        problems.append(f"{where}: reconcile {step.reconcile!r} must be a function of a leased step")
    if not step.description:
        problems.append(f"{where}: a description is missing")
    if unknown := [p for p in step.ports if p not in service.tables and p != service.events]:
        problems.append(
            f"{where}: unknown ports {unknown} (tables {sorted(service.tables)} or {service.events!r})"
        )
    if step.timeout_seconds <= 0:
        problems.append(f"{where}: timeout_seconds must be positive (it is the fence lease)")
    return problems + _problems_of_effect(step, service.entity.table) + _problems_of_routes(service, step)


def _problems_of_effect(step: Step, entity_table: str) -> list[str]:
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


def _problems_of_routes(service: Service, step: Step) -> list[str]:
    where = f"step {step.name}"
    names = {s.name for s in service.steps}
    problems = []
    try:
        target = service.next_of(step)
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


def _problems_of_consumer(service: Service, consumer: Consumer, code_root: Path) -> list[str]:
    where = f"consumer {consumer.name or '<no name>'}"
    tables = service.tables
    problems = []
    if not consumer.name or not consumer.name.replace("-", "").isalpha() or not consumer.name.islower():
        problems.append(f"{where}: name must be lowercase letters and '-' (its queue and function name)")
    if not _defined(code_root, consumer.effect):
        problems.append(
            f"{where}: effect {consumer.effect!r} is not a function 'module:function' under {code_root.name}/"
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


def check(service: Service, *, code_root: Path, reserved_functions: set[str], source: str) -> None:
    """Every problem of every entry at once, as one ManifestError headed by `source` (the
    declaration's file); `code_root` holds the modules the entries name (the Lambda asset root);
    `reserved_functions` are the names of the service's other functions."""
    names = {step.name for step in service.steps}
    problems = []
    if len(names) != len(service.steps):
        problems.append("two steps share a name")
    if taken_tables := sorted(set(RECORD_TABLES) & service.tables):
        problems.append(f"{taken_tables} are record tables every service has: not tables to declare")
    for step in service.steps:
        problems += _problems_of_step(service, step, code_root)
    consumer_names = [c.name for c in service.consumers]
    if len(set(consumer_names)) != len(consumer_names):
        problems.append("two consumers share a name")
    for consumer in service.consumers:
        problems += _problems_of_consumer(service, consumer, code_root)
    taken = reserved_functions & ({step_function(s) for s in service.steps} | set(consumer_names))
    if taken:
        problems.append(f"function names {sorted(taken)} are already taken")
    if problems:
        raise ManifestError(f"{source}:\n- " + "\n- ".join(problems))
