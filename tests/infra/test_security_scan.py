"""`make lint`'s checkov scan (lab/src/ops/security_scan.py) on every stage: nothing left unanswered."""

from __future__ import annotations

import pytest

from ops import security_scan
from tests.infra.conftest import STAGES, checkov_skips


@pytest.mark.slow
def test_checkov_finds_nothing_unacknowledged_and_every_acknowledgment_is_used() -> None:
    if not security_scan.CHECKOV.is_file():
        pytest.skip("checkov's virtualenv is not built: `make lint` (or make test) builds .venv-checkov")
    # Given every stage's templates, scanned by checkov as `make lint` does
    scans = security_scan.scan(STAGES)
    for stage, scan in scans.items():
        # Then nothing fails and every template parsed
        assert scan.clean, (stage, scan.failed, scan.unparsed)
        assert scan.passed > 300, stage
        # And checkov skipped exactly what the templates acknowledge: none is stale
        used = {(f.check, f.resource): f.reason for f in scan.acknowledged}
        assert used == checkov_skips(stage), stage
