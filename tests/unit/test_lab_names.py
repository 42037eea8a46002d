"""The lab (every module of lab/src), the scale model and the benches name nothing the sample
declares: they read the service's declaration and its proof (`ops.service`, `ops.outcomes`,
`ops.roles`), never its steps, tables or consumers by name. The names come from the sample's
declaration, so one added to it is checked."""

from __future__ import annotations

import re
from pathlib import Path

from orders.workflow import SERVICE
from tests.unit.test_library_is_generic import declared_names

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("scale", "bench", "lab/src")
# A threading.Condition's own method, not the sample's consumer of that name.
NOT_A_NAME = re.compile(r"\.notify\(\)")


def _sources() -> list[Path]:
    paths = [ROOT / entry for entry in GENERIC]
    return sorted(p for path in paths for p in (sorted(path.rglob("*.py")) if path.is_dir() else [path]))


def test_the_generic_lab_names_nothing_the_sample_declares() -> None:
    names = declared_names(SERVICE)
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in _sources()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in pattern.finditer(NOT_A_NAME.sub("", line))
    ]
    assert found == []
