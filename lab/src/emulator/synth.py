"""Synthesize a stage once per test session into `.cache/test-cdk.out/<stage>`.

Runs `app.py` in a subprocess (as `cdk synth` does, with the cdk.json context plus `stage`),
so a test process never loads the jsii runtime just to read templates; `synthesize_stages`
does several stages in one subprocess (lab/src/emulator/_synth_stages.py), which takes about half
the time of one process per stage. cdk-nag runs in that
synth: a finding nobody acknowledged makes it fail with SynthError. An assembly whose inputs
(app, infra, functions, cdk.json, pins) are unchanged since the last run is reused; set
RETRYSAFE_FRESH_SYNTH=1 to force a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emulator import project

ROOT = project.root()  # the service's checkout (emulator.project), not the lab's
CACHE_DIR = ROOT / ".cache" / "test-cdk.out"
_FINGERPRINT = ".inputs-sha256"
# What the synthesized templates depend on: a change here makes an assembly stale (this cache's
# fingerprint, the local cloud's mtime check).
_INPUT_GLOBS = (
    "app.py",
    "cdk.json",
    "requirements.txt",
    "constraints.txt",
    "infra/**/*.py",
    "functions/**/*",
    "lib/reliability/src/**/*",
)
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache"}
SYNTH_TIMEOUT_SECONDS = 600


class SynthError(RuntimeError):
    """`app.py` failed: a cdk-nag finding nobody acknowledged, an invalid config, a CDK error."""


def cdk_context(stage: str) -> dict[str, Any]:
    """What `cdk synth -c stage=<stage>` hands the app: cdk.json's context plus the stage."""
    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return {**context, "stage": stage}


def synth_inputs(project: Path) -> list[Path]:
    """The files of `project` the synthesized templates depend on, in a stable order."""
    return [
        path
        for pattern in _INPUT_GLOBS
        for path in sorted(project.glob(pattern))
        if path.is_file() and not _IGNORED_PARTS & set(path.parts)
    ]


def _fingerprint(stage: str) -> str:
    digest = hashlib.sha256(f"{stage}\n{sys.executable}\n".encode())
    for path in synth_inputs(ROOT):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


# Synthesis must need no AWS account: run it with no way to find credentials.
_CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def synth_env(project: Path) -> dict[str, str]:
    """The Makefile's toolchain environment: caches inside the project, no end-of-life banner."""
    env = dict(os.environ)
    env.setdefault("JSII_RUNTIME_PACKAGE_CACHE_ROOT", str(project / ".cache" / "jsii"))
    env.setdefault("CDK_HOME", str(project / ".cache" / "cdk"))
    env.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
    env.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    if "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION" not in env and shutil.which("node"):
        major = subprocess.run(
            ["node", "-p", "process.versions.node.split('.')[0]"],  # noqa: S607 - node from PATH, as the Makefile
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if major:
            env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = major
    return env


def _env() -> dict[str, str]:
    env = {k: v for k, v in synth_env(ROOT).items() if k not in _CREDENTIAL_VARS}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    env["AWS_CONFIG_FILE"] = os.devnull
    return env


def _run(args: list[str], env: dict[str, str], what: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(  # noqa: S603 - this interpreter running the project's app.py
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SYNTH_TIMEOUT_SECONDS,
        check=False,
    )
    if proc.returncode != 0:
        raise SynthError(f"synth of {what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def synth_into(outdir: Path, stage: str) -> subprocess.CompletedProcess[str]:
    """Run app.py, exactly as `cdk synth -c stage=<stage>` does, into `outdir`."""
    env = _env() | {"CDK_OUTDIR": str(outdir), "CDK_CONTEXT_JSON": json.dumps(cdk_context(stage))}
    return _run([str(ROOT / "app.py")], env, f"stage {stage!r}")


def _swap_in(staging: Path, outdir: Path) -> None:
    """Replace `outdir` by `staging` whole, so a reader never sees half an assembly; another
    session may be swapping in the same stage at the same moment, so retry a lost race."""
    retired = Path(tempfile.mkdtemp(prefix=f".{outdir.name}-old-", dir=outdir.parent))
    try:
        for attempt in range(5):
            with contextlib.suppress(FileNotFoundError):
                outdir.rename(retired / str(attempt))
            try:
                staging.rename(outdir)
            except OSError:
                continue
            return
        raise SynthError(f"could not replace {outdir}: another process keeps writing it")
    finally:
        shutil.rmtree(retired, ignore_errors=True)


_done: dict[str, Path] = {}


def _is_current(outdir: Path, fingerprint: str) -> bool:
    marker = outdir / _FINGERPRINT
    return (
        os.environ.get("RETRYSAFE_FRESH_SYNTH") != "1"
        and marker.is_file()
        and marker.read_text() == fingerprint
        and (outdir / "manifest.json").is_file()
    )


def synthesize_stages(stages: Sequence[str]) -> dict[str, Path]:
    """Like `synthesize`, for several stages; the stale ones are synthesized in one process."""
    fingerprints = {stage: _fingerprint(stage) for stage in stages if stage not in _done}
    stale = [s for s, fp in fingerprints.items() if not _is_current(CACHE_DIR / s, fp)]
    if len(stale) == 1:
        _synth_fresh(stale, lambda staging: synth_into(staging[stale[0]], stale[0]), fingerprints)
    elif stale:
        _synth_fresh(
            stale,
            lambda staging: _run(
                ["-m", "emulator._synth_stages", json.dumps({s: str(p) for s, p in staging.items()})],
                _env(),
                f"stages {stale}",
            ),
            fingerprints,
        )
    _done.update({stage: CACHE_DIR / stage for stage in fingerprints})
    return {stage: _done[stage] for stage in stages}


def _synth_fresh(
    stages: list[str], run: Callable[[dict[str, Path]], object], fingerprints: Mapping[str, str]
) -> None:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    staging = {s: Path(tempfile.mkdtemp(prefix=f".{s}-", dir=CACHE_DIR)) for s in stages}
    try:
        run(staging)
        for stage, path in staging.items():
            (path / _FINGERPRINT).write_text(fingerprints[stage])
            _swap_in(path, CACHE_DIR / stage)
    finally:
        for path in staging.values():
            shutil.rmtree(path, ignore_errors=True)


def synthesize(stage: str = "dev") -> Path:
    """The cloud assembly directory of `stage` (manifest.json, <stack>.template.json, reports)."""
    return synthesize_stages([stage])[stage]


def stack_names(assembly: Path) -> list[str]:
    manifest = json.loads((assembly / "manifest.json").read_text())
    return sorted(
        name
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    )


def stacks_of_stage(assembly: Path, stage: str) -> bool:
    """True when every stack in the assembly is a `{service}-{stage}-...` stack."""
    try:
        manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    stacks = [
        name
        for name, artifact in manifest.get("artifacts", {}).items()
        if artifact.get("type") == "aws:cloudformation:stack"
    ]
    # `{service}-{stage}-{kind}`: the stage is what precedes the last dash (`local` is not
    # `local-express`, whose stacks also hold `-local-`).
    return bool(stacks) and all(name.rsplit("-", 1)[0].endswith(f"-{stage}") for name in stacks)


def load_template(assembly: Path, stack_name: str) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((assembly / f"{stack_name}.template.json").read_text())
    return template


def templates(stage: str = "dev") -> dict[str, dict[str, Any]]:
    """Every template of `stage`, keyed by stack name (`retrysafe-dev-data`, `retrysafe-dev-app`)."""
    assembly = synthesize(stage)
    return {name: load_template(assembly, name) for name in stack_names(assembly)}
