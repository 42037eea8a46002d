"""Which deployment an operator tool talks to, and that deployment's stack outputs.

Outputs are what the CDK CLI wrote with `--outputs-file` when it deployed the stage
(`make deploy`, see ops.deploy). Precedence, so that the same command serves every environment:
1. `RETRYSAFE_TARGET=aws|localstack|local` names the target explicitly (CI does);
2. else `AWS_ENDPOINT_URL` set: LocalStack (or any endpoint); `AWS_PROFILE` set: AWS;
3. else the local cloud.
AWS and LocalStack outputs are in `.cdk-outputs/<target>-<stage>.json` (stage from
`RETRYSAFE_STAGE`, default `dev`; `RETRYSAFE_OUTPUTS_FILE` names another file). The local cloud's
are in `$LOCALCLOUD_DIR/outputs.json` (default `.localcloud/`): the CLI's outputs with the REST API
URL pointed at the local cloud's HTTP server.
LocalStack (or any engine that follows its conventions) is reached as `localstack()` says, for
`make deploy` and the ops tools alike; its REST API through the endpoint (`api_via_endpoint`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import boto3
from botocore.config import Config

from ops.api_client import api_via_endpoint

DEFAULT_STATE_DIR = Path(".localcloud")
DEFAULT_OUTPUTS_FILE = DEFAULT_STATE_DIR / "outputs.json"
CLI_OUTPUTS_DIR = Path(".cdk-outputs")
TARGET_ENV = "RETRYSAFE_TARGET"


def local_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The local cloud's state directory: `$LOCALCLOUD_DIR`, else `.localcloud`."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("LOCALCLOUD_DIR") or DEFAULT_STATE_DIR)


def add_state_dir_option(parser: argparse.ArgumentParser) -> None:
    """`--dir`: the local cloud's state directory, for the tools that drive a local cloud."""
    parser.add_argument(
        "--dir",
        type=Path,
        default=local_state_dir(),
        help="the local cloud's state directory (env LOCALCLOUD_DIR, default .localcloud)",
    )


def default_outputs_file() -> Path:
    """Where the local cloud writes its outputs: `$LOCALCLOUD_DIR/outputs.json`, else the default."""
    return local_state_dir() / "outputs.json"


def outputs_file(target: str, stage: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where `cdk deploy --outputs-file` writes a stage's outputs on AWS or LocalStack."""
    environ = os.environ if environ is None else environ
    override = environ.get("RETRYSAFE_OUTPUTS_FILE")
    return Path(override) if override else CLI_OUTPUTS_DIR / f"{target}-{stage}.json"


def read_cli_outputs(path: Path) -> dict[str, str]:
    """Every stack's outputs in one map; CDK's `ExportsOutput*` keys (cross-stack plumbing) left out."""
    stacks: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return {
        key: value
        for values in stacks.values()
        for key, value in values.items()
        if not key.startswith("ExportsOutput")
    }


DEFAULT_STAGE = "dev"
# The operator tools' clients: the SDK's standard retries (3 attempts in all; a resend after a lost
# answer meets the first attempt's write), as `Target.client` builds them.
CLIENT_CONFIG = Config(retries={"mode": "standard"})
# The local cloud accepts any credentials; real AWS never sees these because an endpoint or
# profile from the environment takes precedence.
_LOCAL_CREDENTIALS = ("local", "local")
# LocalStack's conventions: its endpoint, its documented `test` credentials, and a region.
LOCALSTACK_ENDPOINT = "http://localhost.localstack.cloud:4566"
LOCALSTACK_CREDENTIALS = ("test", "test")
LOCALSTACK_REGION = "us-east-1"


@dataclass(frozen=True)
class LocalStack:
    """Where LocalStack is and who we are there, as the environment says (else its defaults)."""

    endpoint: str
    region: str
    credentials: tuple[str, str]  # access key id, secret access key

    def client(self, service_name: str) -> Any:
        key, secret = self.credentials
        return boto3.client(
            service_name,
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
        )


def localstack(environ: Mapping[str, str] | None = None) -> LocalStack:
    """`AWS_ENDPOINT_URL`, `AWS_REGION`/`AWS_DEFAULT_REGION` and the access keys when set, else
    LocalStack's defaults: the same answer for `make deploy TARGET=localstack` and the ops tools."""
    environ = os.environ if environ is None else environ
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    return LocalStack(
        endpoint=environ.get("AWS_ENDPOINT_URL") or LOCALSTACK_ENDPOINT,
        region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or LOCALSTACK_REGION,
        credentials=(key, secret) if key and secret else LOCALSTACK_CREDENTIALS,
    )


class TargetNotFound(RuntimeError):
    """Neither an AWS endpoint/profile nor a running local cloud was found."""


def run_tool(main: Callable[[], int]) -> NoReturn:
    """An operator tool's entry point: its exit code, and a missing target as the one line that
    says how to get one (exit 2), never a traceback."""
    try:
        code = main()
    except TargetNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        code = 2
    raise SystemExit(code)


@dataclass(frozen=True)
class Target:
    """An endpoint (None for AWS itself), its region and the stacks' outputs by OutputKey."""

    endpoint_url: str | None
    region: str
    outputs: Mapping[str, str]
    local: bool = False
    # The emulator's access key id and secret; None: the SDK's own chain (AWS)
    credentials: tuple[str, str] | None = None
    _config: Config = field(default_factory=lambda: CLIENT_CONFIG, repr=False)

    @property
    def _credentials(self) -> tuple[str, str] | None:
        return _LOCAL_CREDENTIALS if self.local else self.credentials

    def session(self) -> boto3.session.Session:
        """A boto3 session with this target's region and credentials (what a request is signed with)."""
        key, secret = self._credentials or (None, None)
        return boto3.session.Session(
            aws_access_key_id=key, aws_secret_access_key=secret, region_name=self.region
        )

    def client(self, service_name: str) -> Any:
        """A boto3 client for this target (typed as Any: boto3 ships no stubs here)."""
        kwargs: dict[str, Any] = {"region_name": self.region, "config": self._config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self._credentials:
            kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = self._credentials
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
        cls, *, path: Path | None = None, stage: str | None = None, name: str | None = None
    ) -> Target:
        """The target `name` (aws, localstack, local), else the one the environment names, else the
        running local cloud."""
        name = (
            name
            or os.environ.get(TARGET_ENV)
            or (
                "localstack"
                if os.environ.get("AWS_ENDPOINT_URL")
                else "aws"
                if os.environ.get("AWS_PROFILE")
                else "local"
            )
        )
        if name == "local":
            path = path or default_outputs_file()
            if path.exists():
                return cls.from_outputs_file(path)
            raise TargetNotFound(
                f"no target: set {TARGET_ENV}, AWS_ENDPOINT_URL or AWS_PROFILE, or start the local cloud "
                f"(`make local-up` writes {path})"
            )
        stage = stage or os.environ.get("RETRYSAFE_STAGE", DEFAULT_STAGE)
        path = path or outputs_file(name, stage)
        if not path.exists():
            raise TargetNotFound(
                f"no outputs of stage {stage} on {name} in {path}: `make deploy STAGE={stage} TARGET={name}` "
                "writes them (a deploy with no changes only writes the file)"
            )
        outputs = read_cli_outputs(path)
        if name == "localstack":
            emulator = localstack()
            return cls(
                endpoint_url=emulator.endpoint,
                region=emulator.region,
                outputs={key: api_via_endpoint(value, emulator.endpoint) for key, value in outputs.items()},
                credentials=emulator.credentials,
            )
        # AWS_REGION as the CDK CLI reads it, then what the SDK finds (AWS_DEFAULT_REGION, profile)
        region = os.environ.get("AWS_REGION") or boto3.session.Session().region_name or "us-east-1"
        return cls(endpoint_url=None, region=region, outputs=outputs)
