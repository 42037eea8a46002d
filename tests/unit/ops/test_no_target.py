"""Every operator tool that reaches a target says how to get one when there is none: one line on
stderr, exit 2, never a traceback (`ops.target.run_tool`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops.target import TargetNotFound, run_tool

ROOT = Path(__file__).resolve().parents[3]
# Two of them end to end (a subprocess each: seconds); every tool's entry is `run_tool`, below.
TOOLS = [["ops.seed"], ["ops.redrive", "dlq", "orders"]]
ENTRIES = ["seed", "invariants/__main__", "rerun", "idem", "redrive", "invoke"]


@pytest.mark.parametrize("tool", TOOLS, ids=" ".join)
def test_a_tool_without_a_target_says_how_to_get_one(tool: list[str], tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"RETRYSAFE_TARGET", "AWS_PROFILE", "AWS_ENDPOINT_URL", "RETRYSAFE_OUTPUTS_FILE"}
    }
    env["LOCALCLOUD_DIR"] = str(tmp_path)  # no local cloud's outputs there
    out = subprocess.run(
        [sys.executable, "-m", *tool],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error: no target"), out.stderr


@pytest.mark.parametrize("module", ENTRIES)
def test_every_tool_that_resolves_a_target_enters_through_run_tool(module: str) -> None:
    source = (ROOT / "lab" / "src" / "ops" / f"{module}.py").read_text()
    assert "run_tool(main)" in source


def test_run_tool_turns_a_missing_target_into_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def main() -> int:
        raise TargetNotFound("no target: start one")

    with pytest.raises(SystemExit) as exited:
        run_tool(main)
    assert exited.value.code == 2
    assert capsys.readouterr().err == "error: no target: start one\n"
