"""The end-to-end target: HTTP for the API, AWS APIs for the rest, never handler code in-process.

`RETRYSAFE_E2E_TARGET` picks it:
- unset (what `make test` does): a local cloud of the suite's own, in its own process on free
  ports (`localcloud.process.background`), into which the CDK CLI deploys the session's
  synthesized `local` assembly (`cdk deploy`, as for any target); stopped with every worker when
  the session ends;
- `outputs`: the local cloud that `.localcloud/outputs.json` (or `$LOCALCLOUD_DIR`) names, e.g.
  after `make local-up`; left running;
- `aws` or `localstack`: the stage `RETRYSAFE_STAGE` (default dev) that `make deploy` put on that
  target: outputs from the CLI's outputs file, clients and credentials as ops.target resolves them
  (LocalStack: `AWS_ENDPOINT_URL`, its `test` keys unless others are set). API requests are
  SigV4-signed with the target's credentials when the stage's API has IAM auth (cdk.json's
  `api_auth`), also on LocalStack, and there the API is reached through the endpoint. Tests that
  need the local cloud's process control skip there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest

from infra.config import CONTEXT_KEY, ApiAuth, load_config
from localcloud import control, process
from localcloud import outputs as outputs_file
from ops import polling
from ops.api_client import ApiClient
from ops.seed import seed_service
from ops.target import DEFAULT_STAGE, Target
from simulator.synth import cdk_context

T = TypeVar("T")
TARGET_ENV = "RETRYSAFE_E2E_TARGET"
DEPLOYED = ("aws", "localstack")  # the targets of `make deploy` the suite can drive
WAIT_SECONDS = float(os.environ.get("RETRYSAFE_E2E_WAIT", "90"))


@dataclass(frozen=True)
class E2ETarget:
    api: ApiClient
    outputs: dict[str, str]
    client: Callable[[str], Any]
    control_endpoint: str | None  # the local cloud's AWS endpoint (crash/worker control); None on AWS
    local: outputs_file.Outputs | None = None  # the local cloud's outputs; None on AWS
    state_dir: Path | None = None  # the local cloud's state directory (function logs); None on AWS

    def output(self, key: str) -> str:
        return self.outputs[key]


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = WAIT_SECONDS) -> T:
    """Poll `probe` until it returns something other than None (TimeoutError after `timeout`)."""
    return polling.wait_for(what, probe, timeout=timeout)


def _local_target(out: outputs_file.Outputs, state_dir: Path) -> E2ETarget:
    session = boto3.session.Session(
        aws_access_key_id="local", aws_secret_access_key="local", region_name=out.region
    )
    assert out.api_url, "the local cloud serves no REST API"
    return E2ETarget(
        api=ApiClient(out.api_url),
        outputs=dict(out.outputs),
        client=lambda name: session.client(name, endpoint_url=out.endpoint),
        control_endpoint=out.endpoint,
        local=out,
        state_dir=state_dir,
    )


def iam_auth(stage: str) -> bool:
    """Whether the stage's API authorizes with IAM (SigV4), as cdk.json declares it."""
    return load_config(cdk_context(stage)[CONTEXT_KEY], stage).api_auth is ApiAuth.IAM


def deployed_target(name: str, stage: str) -> E2ETarget:
    """A stage `make deploy` put on AWS or LocalStack, reached as ops.target resolves it."""
    target = Target.resolve(name=name, stage=stage)
    signer = target.session() if iam_auth(stage) else None
    return E2ETarget(
        api=ApiClient(
            target.output("ApiUrl"), sign_with=signer, region=target.region, endpoint=target.endpoint_url
        ),
        outputs=dict(target.outputs),
        client=target.client,
        control_endpoint=None,
    )


@pytest.fixture(scope="session")
def e2e(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2ETarget]:
    choice = os.environ.get(TARGET_ENV, "").strip().lower()
    if choice in DEPLOYED:
        target = deployed_target(choice, os.environ.get("RETRYSAFE_STAGE") or DEFAULT_STAGE)
    elif choice == "outputs":
        target = _local_target(outputs_file.load(), Path(os.environ.get("LOCALCLOUD_DIR") or ".localcloud"))
    elif choice:
        raise pytest.UsageError(
            f"{TARGET_ENV} must be unset, 'outputs', 'aws' or 'localstack', not {choice!r}"
        )
    else:
        assembly: Path = request.getfixturevalue("local_assembly")
        state_dir = tmp_path_factory.mktemp("e2e-localcloud")
        with process.background(state_dir=state_dir, assembly=assembly, extra_args=["--prewarm"]) as out:
            target = _local_target(out, state_dir)
            seed_service(target.client("dynamodb"), target.outputs)
            yield target
        return
    seed_service(target.client("dynamodb"), target.outputs)
    yield target


@pytest.fixture
def local_control(e2e: E2ETarget) -> str:
    """The local cloud's endpoint for its control routes; skips against AWS."""
    if e2e.control_endpoint is None:
        pytest.skip("needs the local cloud's worker processes")
    control.status(e2e.control_endpoint)  # answers, or the test errors here
    return e2e.control_endpoint
