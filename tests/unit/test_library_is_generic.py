"""The reliability library is generic: its source names nothing the sample declares.

A name of the orders sample in lib/reliability/src (a step, its function, a consumer, a table
besides the entity's) would be a fact of the sample written into what every service depends on.
The names come from the sample's declaration, so a step or table added to it is checked too."""

from __future__ import annotations

import re
from pathlib import Path

from orders.workflow import SERVICE
from reliability.declaration import Service, function_name

LIBRARY_SOURCE = Path(__file__).resolve().parents[2] / "lib" / "reliability" / "src"


def declared_names(service: Service) -> set[str]:
    """What the service names that no other service would: its steps (state and function names),
    its consumers, its tables (the entity's own table name is a plain noun, left out)."""
    names = {name for step in service.steps for name in (step.name, function_name(step.name))}
    names |= {consumer.name for consumer in service.consumers}
    return names | (set(service.tables) - {service.entity.table})


def sample_names_in(source: Path, names: set[str]) -> list[str]:
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b", re.IGNORECASE)
    return [
        f"{path.relative_to(source)}:{number}: {match.group(0)}"
        for path in sorted(source.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in pattern.finditer(line)
    ]


def test_the_library_source_names_nothing_the_sample_declares() -> None:
    names = declared_names(SERVICE)
    assert {"ChargePayment", "charge-payment", "notify", "inventory"} <= names  # the check reads the sample
    assert sample_names_in(LIBRARY_SOURCE, names) == []


def test_a_sample_name_in_the_library_is_found(tmp_path: Path) -> None:
    # Given a library module that names one of the sample's steps in a docstring
    (tmp_path / "module.py").write_text('"""Crash after ChargePayment."""\n')
    # Then the check points at it
    assert sample_names_in(tmp_path, declared_names(SERVICE)) == ["module.py:1: ChargePayment"]
