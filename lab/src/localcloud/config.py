"""The local cloud's settings: one frozen dataclass, read once from flags and the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from emulator.config import REGION as DEFAULT_REGION
from ops.local import outputs

# Not LocalStack's 4566, so both can run side by side; the REST API listens on the next port.
DEFAULT_PORT = 4599
# Warm workers per function at most; a call that finds them all busy waits for one. A call is
# mostly waiting on the endpoint, so 3 made `make load`'s 16 clients queue for the API function
# (the sample's orders: POST p50 9 s at 0.7/s; 2.1/s with 12, same 60 orders).
DEFAULT_MAX_WORKERS = 16
# A warm worker nobody called for this long is stopped (Lambda also reclaims idle sandboxes).
DEFAULT_IDLE_SECONDS = 600.0
CRASH_POINTS_ENV = "RETRYSAFE_CRASH_POINTS"
CRASH_STATE_DIR_ENV = "RETRYSAFE_CRASH_STATE_DIR"
CRASH_MODE_ENV = "RETRYSAFE_CRASH_MODE"  # exit (a real death, the default) or raise


def _int_env(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


@dataclass(frozen=True)
class Config:
    """Where the local cloud listens, what it deploys and where it keeps its state."""

    port: int = DEFAULT_PORT
    api_port: int | None = None  # None: port + 1
    region: str = DEFAULT_REGION
    state_dir: Path = Path(".localcloud")
    assembly: Path | None = None  # None: `cdk.out/` if it holds a fresh local stage, else synthesize
    stage: str = "local"
    project_dir: Path = Path()
    max_workers: int = DEFAULT_MAX_WORKERS
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    live_log: bool = False
    prewarm: bool = False  # one warm worker per function right after deploy (no cold starts)
    crash_points: str | None = None
    crash_state_dir: Path | None = None
    crash_mode: str | None = None
    extra_worker_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, **overrides: object) -> Config:
        """Defaults, then LOCALCLOUD_* and RETRYSAFE_CRASH_* variables, then explicit overrides."""
        values: dict[str, object] = {
            "port": _int_env("LOCALCLOUD_PORT", DEFAULT_PORT),
            "region": os.environ.get("LOCALCLOUD_REGION", DEFAULT_REGION),
            "state_dir": Path(os.environ.get("LOCALCLOUD_DIR", ".localcloud")),
            "crash_points": os.environ.get(CRASH_POINTS_ENV) or None,
            "crash_mode": os.environ.get(CRASH_MODE_ENV) or None,
        }
        if os.environ.get("LOCALCLOUD_API_PORT"):
            values["api_port"] = int(os.environ["LOCALCLOUD_API_PORT"])
        if os.environ.get(CRASH_STATE_DIR_ENV):
            values["crash_state_dir"] = Path(os.environ[CRASH_STATE_DIR_ENV])
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)  # type: ignore[arg-type]

    @property
    def endpoint(self) -> str:
        return f"http://localhost:{self.port}"  # localhost: see server.MotoEndpoint.url

    @property
    def rest_api_port(self) -> int:
        if self.api_port is not None:
            return self.api_port
        return self.port + 1 if self.port else 0  # port 0 (tests): any free port for both

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def outputs_path(self) -> Path:
        return self.state_dir / "outputs.json"

    @property
    def cli_outputs_path(self) -> Path:
        return self.state_dir / outputs.CLI_OUTPUTS_FILE

    @property
    def ready_path(self) -> Path:
        """Written by `run` once deployed (and prewarmed): what `up` waits for."""
        return self.state_dir / "ready"

    @property
    def pid_path(self) -> Path:
        return self.state_dir / "localcloud.pid"

    def crash_env(self) -> dict[str, str]:
        """What the workers get for crash injection; empty (off) unless configured."""
        env: dict[str, str] = {}
        if self.crash_points:
            env[CRASH_POINTS_ENV] = self.crash_points
            state_dir = self.crash_state_dir or (self.state_dir / "crash").resolve()
            env[CRASH_STATE_DIR_ENV] = str(state_dir)
            if self.crash_mode:
                env[CRASH_MODE_ENV] = self.crash_mode
        return env

    def with_crash_points(
        self, crash_points: str | None, *, state_dir: Path | None = None, mode: str | None = None
    ) -> Config:
        return replace(
            self,
            crash_points=crash_points or None,
            crash_state_dir=state_dir or self.crash_state_dir,
            crash_mode=mode or self.crash_mode,
        )
