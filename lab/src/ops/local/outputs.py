"""`.localcloud/outputs.json`: how every client finds the running local cloud.

The local cloud writes `endpoint.json` (its AWS endpoint and region) as soon as it serves; a
deploy (`make deploy STAGE=local`, `python -m ops.deploy`) reads it to find the cloud, lets the
CDK CLI write its outputs to `cdk-outputs.json` and derives `outputs.json` from them: the CLI's
outputs with each execute-api URL pointed at the REST API the local cloud serves.
"""

from __future__ import annotations

import json
import os
import re
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


def state_dir() -> Path:
    """`$LOCALCLOUD_DIR`, default `.localcloud` in the working directory."""
    return Path(os.environ.get("LOCALCLOUD_DIR") or ".localcloud")


def default_path() -> Path:
    """`$LOCALCLOUD_DIR/outputs.json` (default `.localcloud/outputs.json` in the working directory)."""
    return state_dir() / "outputs.json"


ENDPOINT_FILE = "endpoint.json"
CLI_OUTPUTS_FILE = "cdk-outputs.json"  # what `cdk deploy --outputs-file` writes for the local cloud
_EXECUTE_API_URL = re.compile(r"^https://([A-Za-z0-9]+)\.execute-api\.[^/]+/[^/]*/(.*)$")


@dataclass(frozen=True)
class Endpoint:
    """A running local cloud's AWS endpoint and region (`endpoint.json`)."""

    url: str
    region: str


def write_endpoint(endpoint: Endpoint, directory: str | os.PathLike[str]) -> None:
    _write_json({"endpoint": endpoint.url, "region": endpoint.region}, Path(directory) / ENDPOINT_FILE)


def load_endpoint(directory: str | os.PathLike[str] | None = None) -> Endpoint:
    """The endpoint of the local cloud using this state directory; FileNotFoundError if none runs."""
    data = json.loads((Path(directory or state_dir()) / ENDPOINT_FILE).read_text(encoding="utf-8"))
    return Endpoint(url=data["endpoint"], region=data["region"])


def from_cli_outputs(
    cli_outputs: dict[str, dict[str, str]], *, endpoint: Endpoint, apis: dict[str, str]
) -> Outputs:
    """`outputs.json` from the CDK CLI's outputs file: execute-api URLs of the APIs served here
    (`apis`: REST API id -> local URL) point at their local URL; CDK's `ExportsOutput*` keys
    (cross-stack plumbing) stay under `stacks` only."""

    def localize(value: str) -> str:
        match = _EXECUTE_API_URL.match(value)
        if match and match.group(1) in apis:
            return apis[match.group(1)] + match.group(2)
        return value

    stacks = {
        name: {key: localize(str(value)) for key, value in values.items()}
        for name, values in cli_outputs.items()
    }
    merged = {
        key: value
        for values in stacks.values()
        for key, value in values.items()
        if not key.startswith("ExportsOutput")
    }
    return Outputs(
        endpoint=endpoint.url,
        api_url=next(iter(apis.values()), None),
        region=endpoint.region,
        outputs=merged,
        stacks=stacks,
    )


def load(path: str | os.PathLike[str] | None = None) -> Outputs:
    """Read the outputs a running local cloud wrote; FileNotFoundError when none is running."""
    return Outputs.from_json(json.loads(Path(path or default_path()).read_text(encoding="utf-8")))


def write(outputs: Outputs, path: str | os.PathLike[str]) -> None:
    """Write atomically, so a reader never sees half a file."""
    _write_json(outputs.to_json(), Path(path))


def _write_json(document: dict[str, Any], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)
