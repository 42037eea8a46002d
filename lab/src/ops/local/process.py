"""A local cloud in a background process, for test suites and tools that want one of their own.

    with ops.local.process.background(state_dir=tmp / "lc") as out:   # free ports, own state dir
        requests.post(out.api_url + "<route>", ...); boto3.client("sqs", **client_kwargs(out))

The same `python -m localcloud up` / `down` the Makefile runs, so handler code and moto stay out
of the caller's process; `down` runs even when the body raises.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from emulator import project
from ops.local import outputs

PROJECT_DIR = project.root()


class StartError(RuntimeError):
    """`python -m localcloud up` failed; the message carries its output."""


def _run(args: Sequence[str], env: dict[str, str] | None, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own module
        [sys.executable, "-m", "localcloud", *args],
        cwd=PROJECT_DIR,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def background(
    *,
    state_dir: Path,
    assembly: Path | None = None,
    port: int = 0,
    api_port: int | None = None,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout: float = 900,
) -> Iterator[outputs.Outputs]:
    """Start a local cloud (port 0: any free ports), yield its outputs, stop it and its workers."""
    args = ["--dir", str(state_dir), "--port", str(port)]
    if api_port is not None:
        args += ["--api-port", str(api_port)]
    if assembly is not None:
        args += ["--assembly", str(assembly)]
    try:
        # Inside the try: Ctrl-C while `up` waits still runs `down` (up records the server's pid
        # as soon as it spawns it, so `down` finds a server that is still starting).
        started = _run(["up", *args, *extra_args], env, timeout)
        if started.returncode != 0:
            raise StartError(
                f"local cloud did not start ({started.returncode}):\n{started.stdout}{started.stderr}"
            )
        yield outputs.load(Path(state_dir) / "outputs.json")
    finally:
        _run(["down", "--dir", str(state_dir)], env, 60)
