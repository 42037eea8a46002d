"""Every key outlives every path by which it can come back, checked at synth (infra/config.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from emulator.synth import ROOT, cdk_context


def test_a_synth_with_a_dedup_ttl_shorter_than_its_window_fails_naming_the_windows(tmp_path: Path) -> None:
    # Given a stage whose consumers would forget an event id after 2 days
    context = cdk_context("dev")
    context["retrysafe"]["stages"]["dev"]["dedup_ttl_days"] = 2
    # When it is synthesized as `cdk synth` does
    proc = subprocess.run(
        [sys.executable, str(ROOT / "app.py")],
        cwd=ROOT,
        env={**os.environ, "CDK_OUTDIR": str(tmp_path), "CDK_CONTEXT_JSON": json.dumps(context)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then the synth fails, naming the TTL, the window it must outlive and what that window is made of
    assert proc.returncode != 0
    assert "consumer dedup TTL (dedup_ttl_days) is 2 d, shorter than the 32 d it must outlive" in proc.stderr
    assert (
        "(Step Functions redrive window 14 d + consumer-queue retention 4 d + DLQ retention 14 d)"
        in proc.stderr
    )
    assert not list(tmp_path.glob("*.template.json"))
