"""The local cloud an ops tool drives (`make demo`, `make fuzz`, `make load`): start, stop, clients.

    with local_cloud(args.dir, say) as (out, started_here):
        target = target_of(out)        # boto3 clients and stack outputs, as every ops tool reads them

The running local cloud in the state directory is used and left running; else one is started there
(`ops.local.process.background`, the same `up`/`down` the Makefile runs) and stopped on the way
out, also on an error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ops.local import control, process
from ops.local import outputs as outputs_file
from ops.local.outputs import Outputs
from ops.service import service
from ops.target import Target
from reliability.declaration import Service

# The stage the local cloud deploys unless a tool asks for another (`local-express`: the same on Express).
LOCAL_STAGE = "local"


def target_of(out: Outputs) -> Target:
    """The ops tools' view of a local cloud: its endpoint, region, outputs and clients."""
    return Target(endpoint_url=out.endpoint, region=out.region, outputs=out.outputs, local=True)


def running(state_dir: Path) -> Outputs | None:
    """The local cloud serving from `state_dir`, or None (no outputs, or a stale file of one gone)."""
    path = state_dir / "outputs.json"
    if not path.exists():
        return None
    try:
        existing = outputs_file.load(path)
        control.status(existing.endpoint)
    except (OSError, ValueError, KeyError):
        return None
    return existing


class StageMismatch(RuntimeError):
    """The local cloud running in the state directory serves another stage than the one asked for."""


def serves(out: Outputs, stage: str, declared: Service | None = None) -> bool:
    """Whether a local cloud's outputs are the stage's: its state machine is
    `{service}-{stage}-{entity}-workflow` (`reliability.cdk.app_stack`), the entity the service's
    (`declared`, default `ops.service.service()`)."""
    entity = (declared or service()).entity.name
    machine = str(out.outputs.get("StateMachineArn", "")).rsplit(":", 1)[-1]
    return machine.removesuffix(f"-{entity}-workflow").endswith(f"-{stage}")


@contextlib.contextmanager
def local_cloud(
    state_dir: Path, say: Callable[[str], None], *, stage: str = LOCAL_STAGE
) -> Iterator[tuple[Outputs, bool]]:
    """The running local cloud (left running), else one of `stage` started here and stopped on the
    way out; with whether it was started here. A running one of another stage is refused
    (`StageMismatch`): the tool would drive the wrong workflow."""
    with _sigterm_unwinds():
        existing = running(state_dir)
        if existing is not None:
            if not serves(existing, stage):
                raise StageMismatch(
                    f"the local cloud running in {state_dir} is not stage {stage}: stop it "
                    "(`make local-down`) or give this tool another --dir"
                )
            say(f"using the running local cloud at {existing.endpoint} (left running)")
            yield existing, False
            return
        say(f"starting a local cloud (the first run synthesizes the {stage} stage, ~40 s) ...")
        started = time.monotonic()
        port = int(os.environ.get("LOCALCLOUD_PORT") or 0)  # 0: free ports, no clash with anything
        extra = ["--prewarm", "--stage", stage]
        with process.background(state_dir=state_dir, port=port, extra_args=extra) as out:
            say(
                f"local cloud up in {time.monotonic() - started:.1f}s: "
                f"API {out.api_url}, endpoint {out.endpoint}"
            )
            try:
                yield out, True
            finally:
                say("stopping the local cloud it started ...")


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so the tool's finally blocks run (the `down` of a cloud
    started here, crash points put back); main thread only, where Python takes signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def fresh_crash_dir(out: Outputs, *, restore: bool) -> Iterator[Path]:
    """A fresh hit-marker directory (so a crash armed with it fires once); with `restore`, the
    cloud's crash points are put back as they were on the way out."""
    previous = control.status(out.endpoint).get("crash", {}) if restore else {}
    directory = Path(tempfile.mkdtemp(prefix="retrysafe-crash-"))
    try:
        yield directory
    finally:
        if restore:
            with contextlib.suppress(OSError):
                control.set_crash_points(
                    out.endpoint,
                    previous.get("RETRYSAFE_CRASH_POINTS"),
                    state_dir=previous.get("RETRYSAFE_CRASH_STATE_DIR"),
                    mode=previous.get("RETRYSAFE_CRASH_MODE"),
                )
        shutil.rmtree(directory, ignore_errors=True)
