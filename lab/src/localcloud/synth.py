"""Synthesize the `local` stage when the cloud assembly is missing or older than the app's sources."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from emulator.synth import stacks_of_stage, synth_env, synth_inputs
from localcloud.config import Config


class SynthError(RuntimeError):
    """`cdk synth` failed; the message ends with its output."""


def is_stale(assembly: Path, project: Path) -> bool:
    manifest = assembly / "manifest.json"
    if not manifest.is_file():
        return True
    built = manifest.stat().st_mtime
    return any(path.stat().st_mtime > built for path in synth_inputs(project))


def synth_command(project: Path, stage: str, outdir: Path) -> tuple[list[str], dict[str, str]]:
    """The CDK CLI when installed (it reads cdk.json); otherwise the app with cdk.json's context."""
    env = synth_env(project)
    cli = project / "node_modules" / ".bin" / "cdk"
    if cli.exists():
        return [str(cli), "synth", "--quiet", "-c", f"stage={stage}", "--output", str(outdir)], env
    cdk_json = json.loads((project / "cdk.json").read_text(encoding="utf-8"))
    context = {**cdk_json.get("context", {}), "stage": stage}
    env["CDK_CONTEXT_JSON"] = json.dumps(context)
    env["CDK_OUTDIR"] = str(outdir)
    return str(cdk_json["app"]).split(), env


def ensure_assembly(config: Config, *, log: Callable[[str], None] = print) -> Path:
    """A fresh assembly of the configured stage: `cdk.out/` when `make synth STAGE=<stage>` made
    it and it is newer than the sources, else `state_dir/cdk.out`, synthesized when missing or
    stale (so a dev-stage `cdk.out/` is never deployed by mistake, nor overwritten)."""
    project = config.project_dir.resolve()
    default = project / "cdk.out"
    if stacks_of_stage(default, config.stage) and not is_stale(default, project):
        return default
    outdir = (config.state_dir / "cdk.out").resolve()
    if stacks_of_stage(outdir, config.stage) and not is_stale(outdir, project):
        return outdir
    if not (project / "app.py").is_file():
        raise SynthError(f"no app.py in {project}: pass --assembly DIR (a synthesized cdk.out)")
    command, env = synth_command(project, config.stage, outdir)
    log(f"synthesizing stage {config.stage} into {outdir} ...")
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SynthError(f"`{' '.join(command)}` failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    os.utime(outdir / "manifest.json")  # a synth that changed nothing still counts as fresh
    return outdir
