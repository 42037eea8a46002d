"""`.localcloud/outputs.json`: how every client finds the running local cloud."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Outputs:
    """The endpoint, the REST API's base URL, the region and every stack output by its key."""

    endpoint: str
    api_url: str | None
    region: str
    outputs: dict[str, str] = field(default_factory=dict)
    stacks: dict[str, dict[str, str]] = field(default_factory=dict)

    def __getitem__(self, key: str) -> str:
        return self.outputs[key]

    def client_env(self) -> dict[str, str]:
        """Environment for an AWS SDK or CLI process that should talk to this local cloud."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "api_url": self.api_url,
            "region": self.region,
            "outputs": self.outputs,
            "stacks": self.stacks,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outputs:
        return cls(
            endpoint=data["endpoint"],
            api_url=data.get("api_url"),
            region=data["region"],
            outputs=dict(data.get("outputs", {})),
            stacks={name: dict(values) for name, values in data.get("stacks", {}).items()},
        )


def default_path() -> Path:
    """`$LOCALCLOUD_DIR/outputs.json` (default `.localcloud/outputs.json` in the working directory)."""
    return Path(os.environ.get("LOCALCLOUD_DIR") or ".localcloud") / "outputs.json"


def load(path: str | os.PathLike[str] | None = None) -> Outputs:
    """Read the outputs a running local cloud wrote; FileNotFoundError when none is running."""
    return Outputs.from_json(json.loads(Path(path or default_path()).read_text(encoding="utf-8")))


def write(outputs: Outputs, path: str | os.PathLike[str]) -> None:
    """Write atomically, so a reader never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(outputs.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)
