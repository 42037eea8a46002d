"""`make new-service` end to end: a renamed copy in a temporary directory passes its own tests.

The copy runs, with this interpreter and no edit, its infrastructure tier (every stage synthesized
afresh under the new name: cdk-nag, cfn-lint, the assertions on stack, table, queue, function,
alarm and dashboard names) and every unit test file the rename changed (those that spell the
name: environment variables, resource names, the metric namespace). The copy's whole unit tier
would double this test's time for tests the name cannot reach; the copy's whole `make test` was
run by hand (README, "Start your own service").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ops.new_service import ROOT, create, spelling_pattern
from tests.infra.conftest import SERVICE

pytestmark = pytest.mark.slow

# The copy's name: any but this project's own (a team's copy runs this test too).
NEW_NAME = next(name for name in ("payments-api", "ledger-api") if not spelling_pattern(SERVICE).search(name))
TIMEOUT_SECONDS = 900


def test_a_renamed_copy_passes_its_infra_tier_and_the_unit_tests_that_spell_its_name(tmp_path: Path) -> None:
    # Given a copy made as a team would make it
    copy = create(NEW_NAME, tmp_path / NEW_NAME)
    assert f'"service": "{NEW_NAME}"' in (copy / "cdk.json").read_text()
    assert not (copy / ".venv").exists()
    assert subprocess.run(
        ["git", "status", "--porcelain"], cwd=copy, capture_output=True, text=True, check=True
    ).stdout

    # When its infra tier and its unit tests that spell the name run (not this test: it would copy the copy)
    renamed = spelling_pattern(NEW_NAME)
    unit = sorted(
        str(path.relative_to(copy))
        for path in (copy / "tests" / "unit").rglob("test_*.py")
        if renamed.search(path.read_text())
    )
    assert "tests/unit/ops/test_deploy.py" in unit
    # The copy's tests as they are: none of this run's selection (PYTEST_ADDOPTS) carried in.
    env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
    env["JSII_RUNTIME_PACKAGE_CACHE_ROOT"] = str(ROOT / ".cache" / "jsii")
    started = time.monotonic()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/infra",
            *unit,
            "-q",
            "-x",
            # --ignore, not --deselect: a deselected module is still imported
            f"--ignore={Path(__file__).resolve().relative_to(ROOT)}",
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )

    # Then they pass, on stacks named after the new service only
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    print(f"copy's tiers: {run.stdout.strip().splitlines()[-1]} ({time.monotonic() - started:.0f} s)")
    templates = list((copy / ".cache" / "test-cdk.out").glob("*/*.template.json"))
    assert {t.name for t in templates} >= {
        f"{NEW_NAME}-dev-app.template.json",
        f"{NEW_NAME}-dev-data.template.json",
    }
    assert not any(spelling_pattern(SERVICE).search(t.read_text()) for t in templates)
