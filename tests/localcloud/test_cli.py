"""`python -m localcloud up|status|down|run` as the Makefile runs them, in real processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from localcloud.__main__ import alive
from ops.local import process
from tests.localcloud.conftest import ASSEMBLY, free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, state: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LOCALCLOUD_", "RETRYSAFE_CRASH"))
    }
    return subprocess.run(
        [sys.executable, "-m", "localcloud", *args, "--dir", str(state)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_up_status_down_leaves_no_process(tmp_path):
    port, api_port = free_port(), free_port()
    state = tmp_path / "lc"
    try:
        # Given a local cloud started in the background
        up = cli(
            "up", "--assembly", str(ASSEMBLY), "--port", str(port), "--api-port", str(api_port), state=state
        )
        assert up.returncode == 0, up.stderr
        pid = int((state / "localcloud.pid").read_text())
        data = json.loads((state / "outputs.json").read_text())
        assert data["endpoint"] == f"http://localhost:{port}"
        assert data["api_url"] == f"http://127.0.0.1:{api_port}/local/"
        assert data["region"] == "us-east-1"
        assert data["outputs"]["TableName"] == "fx-local-table"

        # When a function runs (so a worker process exists)
        request = urllib.request.Request(
            f"{data['api_url']}orders/1", headers={"User-Agent": "test"}, method="GET"
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200
        workers = json.loads((state / "workers.json").read_text())
        worker_pids = [p for pids in workers.values() for p in pids]
        assert worker_pids
        status = cli("status", state=state)
        assert status.returncode == 0
        assert f"pid {pid}" in status.stdout
        assert '"workers"' in status.stdout

        # Then down stops the server and every worker
        down = cli("down", state=state)
        assert down.returncode == 0
        assert not alive(pid)
        assert not [p for p in worker_pids if alive(p)]
        assert not (state / "outputs.json").exists()
        assert cli("status", state=state).returncode == 1
    finally:
        cli("down", state=state)


def _taken_pair() -> tuple[socket.socket, socket.socket]:
    """Two adjacent ports, both listened on here: the endpoint's and the REST API's next to it
    (holding both, the error can only be about this test's ports, whatever else runs)."""
    while True:
        first = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        first.bind(("127.0.0.1", 0))
        second = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            second.bind(("127.0.0.1", first.getsockname()[1] + 1))
        except OSError:
            first.close()
            second.close()
            continue
        first.listen()
        second.listen()
        return first, second


def test_taken_port_is_a_clear_error(tmp_path):
    first, second = _taken_pair()
    with first, second:
        port = first.getsockname()[1]
        started = time.monotonic()
        run = cli("run", "--assembly", str(ASSEMBLY), "--port", str(port), "--quiet", state=tmp_path / "lc")

    assert run.returncode != 0
    assert any(f"port {taken} on 127.0.0.1" in run.stderr for taken in (port, port + 1)), run.stderr
    assert "already in use" in run.stderr
    assert time.monotonic() - started < 60


def test_background_context_manager_on_any_free_ports(tmp_path):
    state = tmp_path / "bg"
    with process.background(state_dir=state, assembly=ASSEMBLY) as out:
        pid = int((state / "localcloud.pid").read_text())
        with urllib.request.urlopen(f"{out.api_url}orders/7", timeout=60) as response:
            assert response.status == 200
        assert out.endpoint != "http://127.0.0.1:0"

    assert not alive(pid)
