"""Which deployment an operator tool talks to, and that deployment's stack outputs.

Precedence, so that the same command serves every environment:
1. `AWS_ENDPOINT_URL` or `AWS_PROFILE` set: that endpoint or account (LocalStack, a real stage);
   outputs come from CloudFormation DescribeStacks of `{service}-{stage}-data` and `-app`.
2. otherwise the local cloud: `.localcloud/outputs.json` written by `python -m localcloud up`
   (`$LOCALCLOUD_DIR/outputs.json` when that variable names another state directory, as it does
   for `make local-up`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

DEFAULT_OUTPUTS_FILE = Path(".localcloud/outputs.json")


def default_outputs_file() -> Path:
    """Where the local cloud writes its outputs: `$LOCALCLOUD_DIR/outputs.json`, else the default."""
    state_dir = os.environ.get("LOCALCLOUD_DIR")
    return Path(state_dir) / "outputs.json" if state_dir else DEFAULT_OUTPUTS_FILE


DEFAULT_SERVICE = "retrysafe"
DEFAULT_STAGE = "dev"
# The local cloud accepts any credentials; real AWS never sees these because an endpoint or
# profile from the environment takes precedence.
_LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


class TargetNotFound(RuntimeError):
    """Neither an AWS endpoint/profile nor a running local cloud was found."""


@dataclass(frozen=True)
class Target:
    """An endpoint (None for AWS itself), its region and the stacks' outputs by OutputKey."""

    endpoint_url: str | None
    region: str
    outputs: Mapping[str, str]
    local: bool = False
    _config: Config = field(default_factory=lambda: Config(retries={"mode": "standard"}), repr=False)

    def client(self, service_name: str) -> Any:
        """A boto3 client for this target (typed as Any: boto3 ships no stubs here)."""
        kwargs: dict[str, Any] = {"region_name": self.region, "config": self._config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.local:
            kwargs.update(_LOCAL_CREDENTIALS)
        return boto3.client(service_name, **kwargs)

    def output(self, key: str) -> str:
        try:
            return self.outputs[key]
        except KeyError:
            known = ", ".join(sorted(self.outputs)) or "none"
            raise KeyError(f"stack output {key!r} not found (known: {known})") from None

    @classmethod
    def from_outputs_file(cls, path: Path | None = None) -> Target:
        data = json.loads((path or default_outputs_file()).read_text())
        return cls(endpoint_url=data["endpoint"], region=data["region"], outputs=data["outputs"], local=True)

    @classmethod
    def resolve(
        cls,
        *,
        outputs_file: Path | None = None,
        service: str = DEFAULT_SERVICE,
        stage: str | None = None,
    ) -> Target:
        """The target the environment names, else the running local cloud."""
        if os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_PROFILE"):
            session = boto3.session.Session()
            region = session.region_name or "us-east-1"
            stage = stage or os.environ.get("RETRYSAFE_STAGE", DEFAULT_STAGE)
            cfn = session.client("cloudformation", region_name=region)
            outputs: dict[str, str] = {}
            for suffix in ("data", "app"):
                stack = cfn.describe_stacks(StackName=f"{service}-{stage}-{suffix}")["Stacks"][0]
                outputs.update({o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])})
            return cls(endpoint_url=os.environ.get("AWS_ENDPOINT_URL"), region=region, outputs=outputs)
        outputs_file = outputs_file or default_outputs_file()
        if outputs_file.exists():
            return cls.from_outputs_file(outputs_file)
        raise TargetNotFound(
            f"no target: set AWS_ENDPOINT_URL or AWS_PROFILE, or start the local cloud "
            f"(`make local-up` writes {outputs_file})"
        )
