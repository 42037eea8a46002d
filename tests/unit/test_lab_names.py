"""The lab's tools name nothing the sample declares: the scale model, the benches, the story, the
load, the site's hook, the local crash run and the fault search's run plan read the service's
declaration and its proof (`ops.service`, `ops.outcomes`, `ops.roles`), never its steps, tables or
consumers by name. The names come from the sample's declaration, so one added to it is checked.

Not yet here (their owners make them generic): ops/invariants/, chaos/'s mutants, behaviours,
control, report, aim, scenarios, exchanges and foreign (the sample's event type)."""

from __future__ import annotations

import re
from pathlib import Path

from orders.workflow import SERVICE
from tests.unit.test_library_is_generic import declared_names

ROOT = Path(__file__).resolve().parents[2]
GENERIC = (
    "scale",
    "bench",
    "ops/story",
    "ops/load",
    "ops/docs_site.py",
    "ops/roles.py",
    "ops/outcomes.py",
    "chaos/local.py",
    "chaos/run.py",
    "chaos/pairs.py",
    "chaos/points.py",
)


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
        for match in pattern.finditer(line)
    ]
    assert found == []
