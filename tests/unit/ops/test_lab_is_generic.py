"""The invariant checker and the fault search's mutants are generic: they name nothing the sample
declares and import none of its code, so a service that replaces the sample keeps them as they
are (the sample's own counting, rules and mutants live in its proof hooks, `proof/`)."""

from __future__ import annotations

import re
from pathlib import Path

from orders.workflow import SERVICE
from reliability.declaration import Service, function_name

ROOT = Path(__file__).resolve().parents[3] / "lab" / "src"
GENERIC = (
    *sorted((ROOT / "ops" / "invariants").glob("*.py")),
    *(ROOT / "chaos" / name for name in ("mutant.py", "mutants.py", "guards.py", "unguarded.py")),
)


def declared_names(service: Service) -> set[str]:
    """Its steps (state and function names), consumers and tables but the entity's."""
    names = {name for step in service.steps for name in (step.name, function_name(step.name))}
    names |= {consumer.name for consumer in service.consumers}
    return names | (set(service.tables) - {service.entity.table})


def named_in(paths: tuple[Path, ...], names: set[str]) -> list[str]:
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b|^\s*(from|import) orders\b")
    return [
        f"{path.parent.name}/{path.name}:{number}: {match.group(0).strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in pattern.finditer(line)
    ]


def test_the_checker_and_the_mutants_name_nothing_the_sample_declares() -> None:
    assert len(GENERIC) >= 9
    assert named_in(GENERIC, declared_names(SERVICE)) == []


def test_a_sample_name_or_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "rules.py"
    module.write_text('"""Count the ledger."""\nfrom orders import items\n')
    assert [hit.split(":", 1)[1] for hit in named_in((module,), declared_names(SERVICE))] == [
        "1: ledger",
        "2: from orders",
    ]
