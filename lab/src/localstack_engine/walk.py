"""The LocalStack path from end to end on the patched engine: `make e2e-localstack`.

    python -m localstack_engine.walk [--port 4566]

Starts the engine on 127.0.0.1, then runs the LocalStack steps (docs/deploying.md, "The LocalStack
path, step by step") as a user types them, with
`AWS_ENDPOINT_URL` pointing at it: the Powertools layer built for the engine's own Python and
architecture (MiniStack runs functions in its interpreter) and published there, `make deploy
STAGE=dev TARGET=localstack`, `make seed`, the end-to-end tier (`RETRYSAFE_E2E_TARGET=localstack`),
then always `make destroy` once a deploy was tried and always stops the engine. The engine's log is
`.cache/e2e-localstack/engine.log`. Exit status 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from localstack_engine import process

LOG_DIR = process.PROJECT_DIR / ".cache" / "e2e-localstack"
STAGE = "dev"
# The environment a step must not inherit: what would point the tools at another account or
# endpoint, and an enclosing make's (a sub-make prints "Entering directory" on stdout), so that each
# step's make runs as a user's does.
_FOREIGN = (
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "RETRYSAFE_TARGET",
    "MAKELEVEL",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKEOVERRIDES",
)
# Lambda's names for the machine architectures Python reports.
_LAMBDA_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class Step:
    name: str
    command: tuple[str, ...]
    env: Mapping[str, str]  # on top of the walk's environment


@dataclass(frozen=True)
class Outcome:
    step: str
    code: int
    seconds: float
    stdout: str = ""


Runner = Callable[[Step, Mapping[str, str]], Outcome]


def engine_python() -> tuple[str, str]:
    """The engine interpreter's Python version and Lambda architecture (what its functions run on)."""
    probe = "import platform, sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}', platform.machine())"
    out = subprocess.run(  # noqa: S603 - our own virtualenv's Python
        [str(process.ENGINE_PYTHON), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], _LAMBDA_ARCH[out[1].lower()]


def steps(python: str, arch: str) -> tuple[Step, Step, Step, Step, Step]:
    """layer, deploy, seed, e2e, destroy: the documented commands."""
    target = ("STAGE=" + STAGE, "TARGET=localstack")
    return (
        Step(
            "layer", ("make", "layer", "TARGET=localstack", f"LAYER_ARGS=--python {python} --arch {arch}"), {}
        ),
        Step("deploy", ("make", "deploy", *target), {}),
        Step("seed", ("make", "seed"), {}),
        Step("e2e", ("make", "test-e2e"), {"RETRYSAFE_E2E_TARGET": "localstack", "RETRYSAFE_STAGE": STAGE}),
        Step("destroy", ("make", "destroy", *target), {}),
    )


def run_step(step: Step, environ: Mapping[str, str]) -> Outcome:
    """Run a step in the project directory; only the layer step's stdout (the ARN) is captured."""
    prefix = "".join(f"{name}={value} " for name, value in step.env.items())
    print(f"\n== {step.name}: {prefix}{shlex.join(step.command)}", flush=True)
    started = time.monotonic()
    result = subprocess.run(  # noqa: S603 - make, with the documented arguments
        step.command,
        cwd=process.PROJECT_DIR,
        env={**environ, **step.env},
        stdout=subprocess.PIPE if step.name == "layer" else None,
        text=True,
        check=False,
    )
    return Outcome(step.name, result.returncode, time.monotonic() - started, (result.stdout or "").strip())


def walk(
    endpoint: str,
    *,
    python: str,
    arch: str,
    run: Runner = run_step,
    environ: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Every step against the engine at `endpoint`; stops at the first failure, but always destroys
    what a deploy may have created."""
    environ = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _FOREIGN}
    environ["AWS_ENDPOINT_URL"] = endpoint
    layer, deploy, seed, e2e, destroy = steps(python, arch)
    outcomes = [run(layer, environ)]
    if outcomes[-1].code != 0:
        return outcomes
    environ["POWERTOOLS_LAYER_ARN"] = outcomes[-1].stdout.splitlines()[-1]
    try:
        for step in (deploy, seed, e2e):
            outcomes.append(run(step, environ))
            if outcomes[-1].code != 0:
                break
    finally:
        outcomes.append(run(destroy, environ))
    return outcomes


def report(outcomes: Sequence[Outcome]) -> str:
    lines = [
        f"{o.step:<8} {'ok' if o.code == 0 else f'FAILED ({o.code})':<12} {o.seconds:6.1f} s"
        for o in outcomes
    ]
    total = sum(o.seconds for o in outcomes)
    return "\n".join(["", "== the LocalStack path on MiniStack", *lines, f"{'total':<21} {total:6.1f} s"])


@contextlib.contextmanager
def engine_running(port: int) -> Iterator[str]:
    """The engine, its log in LOG_DIR."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / "engine.log"
    with log_path.open("w", encoding="utf-8") as log, process.running(port, log) as endpoint:
        print(f"engine up on {endpoint} (log: {log_path.relative_to(process.PROJECT_DIR)})", flush=True)
        yield endpoint
    print("engine stopped", flush=True)


def main(
    argv: Sequence[str] | None = None,
    *,
    engine: Callable[[int], AbstractContextManager[str]] = engine_running,
    run: Runner = run_step,
) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localstack_engine.walk", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, default=process.PORT)
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        python, arch = engine_python()
        with engine(args.port) as endpoint:
            outcomes = walk(endpoint, python=python, arch=arch, run=run)
    except (process.EngineError, subprocess.CalledProcessError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report(outcomes))
    print(f"engine start to stop: {time.monotonic() - started:.1f} s")
    expected = {"layer", "deploy", "seed", "e2e", "destroy"}
    passed = {o.step for o in outcomes if o.code == 0}
    return 0 if passed == expected else 1


if __name__ == "__main__":
    sys.exit(main())
