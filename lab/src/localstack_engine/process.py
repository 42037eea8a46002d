"""Start and stop the patched engine on 127.0.0.1 (project side: standard library only).

    python -m localstack_engine.process           # make ministack: in the foreground, Ctrl-C stops it
    with running(port=4566) as endpoint: ...       # started, healthy, and stopped (with its workers)

The engine gets a clean environment: MiniStack hands its own process's variables to every function
it runs, and a function's environment on AWS is its configuration plus Lambda's own, nothing of
the machine that deployed it (a PYTHONPATH or AWS_PROFILE from a shell or a Makefile would leak).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from emulator import project

PROJECT_DIR = project.root()
# Where `python -m localstack_engine` finds its package in the engine's own venv, which has none of
# the lab installed: this package's directory (lab/src in a checkout, site-packages when installed).
ENGINE_SOURCE = Path(__file__).resolve().parents[1]
ENGINE_PYTHON = PROJECT_DIR / ".venv-ministack" / "bin" / "python"
HOST = "127.0.0.1"
PORT = 4566  # LocalStack's port: the engine stands in for it
HEALTH_PATH = "/_ministack/health"
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
# What the engine keeps of the caller's environment: enough to run Python and find a temp dir.
_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")


class EngineError(RuntimeError):
    """The engine is not installed, its port is taken, or it did not become healthy."""


def endpoint_of(port: int) -> str:
    return f"http://{HOST}:{port}"


def command() -> list[str]:
    return [str(ENGINE_PYTHON), "-m", "localstack_engine"]


def environment(port: int, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The engine's whole environment: the few variables kept, its bind address and port."""
    environ = os.environ if environ is None else environ
    kept = {name: environ[name] for name in _KEPT if name in environ}
    return {
        **kept,
        "BIND_HOST": HOST,
        "GATEWAY_PORT": str(port),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(ENGINE_SOURCE),
    }


def healthy(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(endpoint + HEALTH_PATH, timeout=2) as response:  # noqa: S310 - 127.0.0.1
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(port: int = PORT, log: IO[str] | None = None) -> subprocess.Popen[str]:
    """Start the engine in a session of its own (so its function workers stop with it); returns once
    it answers its health check."""
    if not ENGINE_PYTHON.is_file():
        raise EngineError(f"no engine: {ENGINE_PYTHON} is missing (`make ministack` builds .venv-ministack)")
    endpoint = endpoint_of(port)
    if healthy(endpoint):
        raise EngineError(f"something already answers on {endpoint}: stop it first")
    engine = subprocess.Popen(  # noqa: S603 - our own module in our own virtualenv
        command(),
        cwd=PROJECT_DIR,
        env=environment(port),
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not healthy(endpoint):
        if engine.poll() is not None:
            raise EngineError(f"the engine exited ({engine.returncode}) before answering on {endpoint}")
        if time.monotonic() > deadline:
            stop(engine)
            raise EngineError(f"the engine did not answer on {endpoint} within {START_TIMEOUT_SECONDS:.0f} s")
        time.sleep(0.2)
    return engine


def stop(engine: subprocess.Popen[str]) -> None:
    """SIGTERM to the engine's whole process group (it and the function workers it started), then
    SIGKILL to what is left after STOP_TIMEOUT_SECONDS."""
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_SECONDS), (signal.SIGKILL, STOP_TIMEOUT_SECONDS)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(engine.pid, sig)
        try:
            engine.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(engine.pid, signal.SIGKILL)  # workers that outlived the engine
        return


@contextlib.contextmanager
def running(port: int = PORT, log: IO[str] | None = None) -> Iterator[str]:
    """The engine on 127.0.0.1:`port` for the duration of the block; yields its endpoint."""
    engine = start(port, log)
    try:
        yield endpoint_of(port)
    finally:
        stop(engine)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localstack_engine.process", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        engine = start(args.port)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    endpoint = endpoint_of(args.port)
    try:
        print(
            f"MiniStack (patched) on {endpoint}; export AWS_ENDPOINT_URL={endpoint}; Ctrl-C stops it",
            flush=True,
        )
        engine.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop(engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
