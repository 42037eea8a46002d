"""`python -m localcloud up|down|run|status`: the local cloud's lifecycle (the Makefile calls these).

`run` starts the endpoint, deploys the assembly into it with the CDK CLI (`python -m ops.deploy
deploy --target local`, as `make deploy STAGE=local`) and serves in the foreground with a live log
until Ctrl-C or SIGTERM. `up` starts `run` as a background process in its own session, shows its
log (the CLI's deploy included) until `.localcloud/outputs.json` is written and returns; `down`
stops that process group (server and every worker); `status` says what runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from localcloud.config import Config
from ops.local import control
from ops.local import outputs as outputs_file

READY_TIMEOUT_SECONDS = 600.0
STOP_TIMEOUT_SECONDS = 20.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m localcloud", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "run", "status"))
    parser.add_argument("--port", type=int, help="AWS endpoint port (env LOCALCLOUD_PORT, default 4599)")
    parser.add_argument(
        "--api-port", type=int, help="REST API port (env LOCALCLOUD_API_PORT, default port+1)"
    )
    parser.add_argument("--region", help="region (env LOCALCLOUD_REGION, default us-east-1)")
    parser.add_argument("--dir", type=Path, help="state directory (env LOCALCLOUD_DIR, default .localcloud)")
    parser.add_argument("--assembly", type=Path, help="deploy this cloud assembly instead of synthesizing")
    parser.add_argument("--stage", default="local", help="stage to synthesize (default local)")
    parser.add_argument("--max-workers", type=int, help="warm workers per function at most (default 16)")
    parser.add_argument(
        "--crash-points",
        help="RETRYSAFE_CRASH_POINTS for the workers (crash injection; off by default)",
    )
    parser.add_argument("--crash-state-dir", type=Path, help="RETRYSAFE_CRASH_STATE_DIR for the workers")
    parser.add_argument("--crash-mode", choices=("exit", "raise"), help="RETRYSAFE_CRASH_MODE (default exit)")
    parser.add_argument("--quiet", action="store_true", help="run: no live function log on the console")
    parser.add_argument("--prewarm", action="store_true", help="start one worker per function after deploy")
    return parser


def _config(args: argparse.Namespace) -> Config:
    return Config.from_env(
        port=args.port,
        api_port=args.api_port,
        region=args.region,
        state_dir=args.dir,
        assembly=args.assembly.resolve() if args.assembly else None,
        stage=args.stage,
        max_workers=args.max_workers,
        crash_points=args.crash_points,
        crash_state_dir=args.crash_state_dir.resolve() if args.crash_state_dir else None,
        crash_mode=args.crash_mode,
        prewarm=args.prewarm or None,
        live_log=not args.quiet,
    )


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet, as `up`'s orphaned child can be in a container, is not)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return True  # no /proc (macOS): the signal check is all there is
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _pid(config: Config) -> int | None:
    try:
        pid = int(config.pid_path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def run(config: Config) -> int:
    # moto is imported here only: `down` and `status` must not pay seconds for it.
    from localcloud.cloud import DeployError, LocalCloud  # noqa: PLC0415
    from localcloud.server import PortInUseError  # noqa: PLC0415
    from localcloud.synth import SynthError  # noqa: PLC0415

    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if (pid := _pid(config)) is not None and pid != os.getpid():
        print(f"a local cloud already runs (pid {pid}): `make local-down` first", file=sys.stderr)
        return 1
    config.state_dir.mkdir(parents=True, exist_ok=True)
    config.pid_path.write_text(f"{os.getpid()}\n", encoding="utf-8")
    cloud = LocalCloud(config, console=sys.stdout)
    started = time.monotonic()
    try:
        cloud.start()
        cloud.deploy()
        config.ready_path.touch()
        print(
            f"ready in {time.monotonic() - started:.1f}s; Ctrl-C (or `make local-down`) stops it", flush=True
        )
        while not stop.wait(1.0):
            pass
        print("stopping ...", flush=True)
    except (PortInUseError, DeployError, SynthError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    else:
        return 0
    finally:
        cloud.stop()
        config.ready_path.unlink(missing_ok=True)
        config.pid_path.unlink(missing_ok=True)


def up(config: Config, argv: list[str]) -> int:
    if (pid := _pid(config)) is not None:
        print(f"already running (pid {pid}); outputs in {config.outputs_path}")
        return 0
    config.state_dir.mkdir(parents=True, exist_ok=True)
    config.outputs_path.unlink(missing_ok=True)
    config.ready_path.unlink(missing_ok=True)
    log_path = config.state_dir / "localcloud.log"
    forwarded = list(argv)
    forwarded.remove("up")  # the command itself; every option goes on to `run`
    with log_path.open("w", encoding="utf-8") as log:
        child = subprocess.Popen(  # noqa: S603 - our own module
            [sys.executable, "-m", "localcloud", "run", *forwarded],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: `down` stops it and every worker
        )
    # Recorded now, not only when `run` gets going: a `down` right away (Ctrl-C of a caller while
    # the cloud deploys) must find it. `run` writes the same pid again.
    config.pid_path.write_text(f"{child.pid}\n", encoding="utf-8")
    try:
        return _wait_ready(config, child, log_path)
    except BaseException:  # Ctrl-C or SIGTERM while waiting: leave nothing behind
        _terminate(child.pid)
        config.pid_path.unlink(missing_ok=True)
        raise


def _wait_ready(config: Config, child: subprocess.Popen[bytes], log_path: Path) -> int:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    with log_path.open(encoding="utf-8") as log:
        while time.monotonic() < deadline:
            sys.stdout.write(log.read())  # the log so far: the endpoint, then the CLI's deploy
            sys.stdout.flush()
            if child.poll() is not None:
                sys.stdout.write(log.read())
                print(
                    f"error: the local cloud exited ({child.returncode}); log in {log_path}", file=sys.stderr
                )
                return 1
            if _ready(config, child, log_path):
                return 0
            time.sleep(0.2)
    _terminate(child.pid)
    print(f"error: not ready after {READY_TIMEOUT_SECONDS:.0f}s; log in {log_path}", file=sys.stderr)
    return 1


def _ready(config: Config, child: subprocess.Popen[bytes], log_path: Path) -> bool:
    """`run` marks itself ready after the deploy (and the prewarm)."""
    if not config.ready_path.exists():
        return False
    data = outputs_file.load(config.outputs_path)
    print(f"local cloud up (pid {child.pid}): endpoint {data.endpoint}, api {data.api_url}")
    print(f"outputs in {config.outputs_path}; log in {log_path}; function logs in {config.log_dir}/")
    return True


def _terminate(pid: int) -> bool:
    """SIGTERM the process (its group when it leads one), then SIGKILL after a grace period."""
    try:
        group = os.getpgid(pid) == pid
    except ProcessLookupError:
        return True

    def send(signum: int) -> None:
        try:
            if group:
                os.killpg(pid, signum)
            else:
                os.kill(pid, signum)
        except ProcessLookupError:
            pass

    send(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if not alive(pid):
            break
        time.sleep(0.1)
    else:
        send(signal.SIGKILL)
    if group:  # workers share the group; none may outlive the server
        send(signal.SIGKILL)
    return True


def down(config: Config) -> int:
    pid = _pid(config)
    if pid is None:
        print("no local cloud running")
        config.pid_path.unlink(missing_ok=True)
        return 0
    _terminate(pid)
    for path in (config.pid_path, config.outputs_path, config.ready_path):
        path.unlink(missing_ok=True)
    print(f"local cloud stopped (pid {pid})")
    return 0


def status(config: Config) -> int:
    pid = _pid(config)
    if pid is None:
        print("no local cloud running")
        return 1
    print(f"running (pid {pid})")
    if not config.outputs_path.exists():
        print("starting (no outputs yet)")
        return 0
    data = outputs_file.load(config.outputs_path)
    try:
        live = control.status(data.endpoint)
    except OSError as exc:
        print(f"endpoint {data.endpoint} does not answer: {exc}")
        return 1
    print(json.dumps({"region": data.region, **live}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = _config(args)
    if args.command == "run":
        code = run(config)
        # Everything was stopped above (workers, pollers, servers). Tearing down moto's and
        # botocore's module state at interpreter exit takes seconds more and does nothing useful.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if args.command == "up":
        return up(config, [*argv, "--quiet"] if "--quiet" not in argv else argv)
    if args.command == "down":
        return down(config)
    return status(config)


if __name__ == "__main__":
    sys.exit(main())
