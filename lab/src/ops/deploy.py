"""Deploy or destroy a synthesized stage with the project's pinned CDK CLI, on any target.

    python -m ops.deploy deploy  --stage dev   --target aws          # make deploy STAGE=dev TARGET=aws
    python -m ops.deploy deploy  --stage dev   --target localstack
    python -m ops.deploy deploy  --stage local --target local        # into the running local cloud
    python -m ops.deploy destroy --stage dev   --target aws          # make destroy ...

One path for every target: print the target (account, endpoint, region, stage) before anything
else; `cdk bootstrap` when the target has no CDK bootstrap stack; then `cdk deploy --all` from the
assembly `make synth` wrote (`--app cdk.out`: no second synth) with `--outputs-file`, the file
`ops.target` and the end-to-end suite read. Targets differ only in the environment the CLI runs
with and in what an emulator lacks:
- `aws`: whatever credentials and region the SDK finds (AWS_PROFILE, SSO, environment variables,
  a role assumed by OIDC in CI); nothing else is asked.
- `localstack`: LocalStack's own convention, `AWS_ENDPOINT_URL` (default
  http://localhost.localstack.cloud:4566) and its `test` credentials unless others are set.
  LocalStack has no public SSM parameters, so each `/aws/service/...` parameter a template
  resolves (the Powertools layer ARN) is overridden with `--parameters`, naming a parameter this
  tool writes there from `POWERTOOLS_LAYER_ARN`.
- `local`: the local cloud whose state directory (`$LOCALCLOUD_DIR`, default `.localcloud`) holds
  its `endpoint.json`; the local cloud answers the public parameters itself. Afterwards it is told
  to serve the REST APIs now deployed, and `outputs.json` is derived from the CLI's outputs.
Each target runs the CLI with a `CDK_HOME` of its own (`cdk_home`): the CLI caches the account of
each access key there, and the local cloud and LocalStack take the same key for two accounts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from emulator import project
from emulator.synth import stacks_of_stage, synth_env
from ops.local import control
from ops.local import outputs as localcloud_outputs
from ops.target import LOCALSTACK_CREDENTIALS, local_state_dir, localstack, outputs_file

PROJECT_DIR = project.root()
CLI = PROJECT_DIR / "node_modules" / ".bin" / "cdk"
TARGETS = ("local", "localstack", "aws")
# What `cdk bootstrap` writes with the default qualifier; templates check it at deploy time.
BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
PUBLIC_PARAMETER_PREFIX = "/aws/service/"
# Where an emulator deploy keeps the values of the public parameters it lacks.
EMULATOR_PARAMETER_PREFIX = "/retrysafe/emulator/"
LAYER_ARN_ENV = "POWERTOOLS_LAYER_ARN"
LAYER_VERSION_ARN = re.compile(r"arn:[\w-]+:lambda:[\w-]+:\d{12}:layer:[\w-]+:\d+")
# The local cloud accepts any credentials; these are LocalStack's documented ones.
_EMULATOR_CREDENTIALS = dict(
    zip(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), LOCALSTACK_CREDENTIALS, strict=True)
)
# Variables that would point the CLI at another account or endpoint than the target's.
_FOREIGN = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)


def cdk_home(target: str, environ: Mapping[str, str]) -> str:
    """The CDK CLI's home directory when it deploys to `target`: `$CDK_HOME/targets/<target>`.

    The CLI caches access key -> account in `$CDK_HOME/cache/accounts_partitions.json` and trusts
    it over STS. The local cloud (moto's account 123456789012) and LocalStack (000000000000) both
    take the key `test`, so with one home the second target's bootstrap fails with
    IncorrectDefaultCredentials ("the current credentials are for" the other account) until the
    file is deleted. Keyed by target, never shared with `make synth`'s home either.
    """
    base = environ.get("CDK_HOME") or str(PROJECT_DIR / ".cache" / "cdk")
    return str(Path(base) / "targets" / target)


class DeployFailed(RuntimeError):
    """The target cannot be reached or the CLI failed; the message says what to do."""


@dataclass(frozen=True)
class PublicParameter:
    """A stack parameter that resolves a public SSM parameter (e.g. the Powertools layer ARN)."""

    stack: str
    key: str
    name: str  # the public parameter, the template's default

    @property
    def emulator_name(self) -> str:
        return EMULATOR_PARAMETER_PREFIX + self.name.removeprefix(PUBLIC_PARAMETER_PREFIX)


@dataclass(frozen=True)
class DeployTarget:
    """Where a stage goes: the CLI's environment, the outputs file, and for the local cloud its state."""

    name: str
    stage: str
    region: str
    endpoint: str | None  # None: AWS itself
    env: Mapping[str, str] = field(default_factory=dict)  # on top of os.environ (None-valued: removed)
    outputs_file: Path = Path()
    local_state: Path | None = None

    def client(self, service: str) -> Any:
        kwargs: dict[str, Any] = {"region_name": self.region}
        if self.endpoint:
            kwargs["endpoint_url"] = self.endpoint
            kwargs["aws_access_key_id"] = self.env.get("AWS_ACCESS_KEY_ID")
            kwargs["aws_secret_access_key"] = self.env.get("AWS_SECRET_ACCESS_KEY")
        return boto3.client(service, **kwargs)

    def describe(self, account: str) -> str:
        where = f"endpoint {self.endpoint}, " if self.endpoint else ""
        return f"target {self.name}: {where}account {account}, region {self.region}, stage {self.stage}"

    def cli_env(self) -> dict[str, str]:
        env = synth_env(PROJECT_DIR)
        if self.endpoint:
            for name in _FOREIGN:
                env.pop(name, None)
        env.update(self.env)
        env["CDK_HOME"] = cdk_home(self.name, env)
        return env


def resolve(
    name: str, stage: str, *, environ: Mapping[str, str] | None = None, localcloud_dir: Path | None = None
) -> DeployTarget:
    """The target `name` as the environment configures it (nothing is contacted here)."""
    environ = os.environ if environ is None else environ
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or ""
    if name == "local":
        state = localcloud_dir or local_state_dir(environ)
        try:
            endpoint = localcloud_outputs.load_endpoint(state)
        except FileNotFoundError:
            raise DeployFailed(f"no local cloud runs with state in {state}: `make local-up` first") from None
        env = {
            "AWS_ENDPOINT_URL": endpoint.url,
            "AWS_REGION": endpoint.region,
            "AWS_DEFAULT_REGION": endpoint.region,
            **_EMULATOR_CREDENTIALS,
        }
        return DeployTarget(
            name,
            stage,
            endpoint.region,
            endpoint.url,
            env,
            state / localcloud_outputs.CLI_OUTPUTS_FILE,
            state,
        )
    if name == "localstack":
        emulator = localstack(environ)
        key, secret = emulator.credentials
        env = {
            "AWS_ENDPOINT_URL": emulator.endpoint,
            "AWS_REGION": emulator.region,
            "AWS_DEFAULT_REGION": emulator.region,
            "AWS_ACCESS_KEY_ID": key,
            "AWS_SECRET_ACCESS_KEY": secret,
        }
        return DeployTarget(
            name, stage, emulator.region, emulator.endpoint, env, outputs_file(name, stage, environ)
        )
    if name == "aws":
        region = region or boto3.session.Session().region_name or ""
        if not region:
            raise DeployFailed("no AWS region: set AWS_REGION or a profile with a region (AWS_PROFILE)")
        return DeployTarget(name, stage, region, None, {}, outputs_file(name, stage, environ))
    raise DeployFailed(f"unknown target {name!r}: one of {', '.join(TARGETS)}")


def public_parameters(app: Path) -> list[PublicParameter]:
    """Stack parameters of the assembly that resolve a public `/aws/service/...` SSM parameter."""
    manifest = json.loads((app / "manifest.json").read_text(encoding="utf-8"))
    found = []
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact.get("properties", {})
        template = json.loads((app / properties["templateFile"]).read_text(encoding="utf-8"))
        for key, slot in (template.get("Parameters") or {}).items():
            default = str(slot.get("Default", ""))
            if str(slot.get("Type", "")).startswith("AWS::SSM::Parameter") and default.startswith(
                PUBLIC_PARAMETER_PREFIX
            ):
                found.append(PublicParameter(str(properties.get("stackName") or artifact_id), key, default))
    return found


def cdk_command(
    action: str, target: DeployTarget, app: Path, *, parameters: Sequence[PublicParameter] = ()
) -> list[str]:
    """The CLI invocation of `deploy`, `destroy` or `bootstrap` for this target and assembly."""
    base = [str(CLI), action, "--app", str(app)]
    if action == "deploy":
        overrides = [
            arg for p in parameters for arg in ("--parameters", f"{p.stack}:{p.key}={p.emulator_name}")
        ]
        return [
            *base,
            "--all",
            "--require-approval",
            "never",
            "--outputs-file",
            str(target.outputs_file),
            *overrides,
        ]
    if action == "destroy":
        return [*base, "--all", "--force"]
    if action == "bootstrap":
        return base
    raise ValueError(f"unknown CLI action {action!r}")


def _account(target: DeployTarget) -> str:
    try:
        return str(target.client("sts").get_caller_identity()["Account"])
    except (BotoCoreError, ClientError) as exc:
        hint = "set AWS_PROFILE or credentials" if target.name == "aws" else f"is {target.endpoint} running?"
        raise DeployFailed(f"cannot reach {target.name} ({hint}): {exc}") from exc


def _bootstrapped(target: DeployTarget) -> bool:
    try:
        target.client("ssm").get_parameter(Name=BOOTSTRAP_VERSION_PARAMETER)
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ParameterNotFound":
            return False
        raise
    return True


def _emulator_overrides(target: DeployTarget, app: Path, environ: Mapping[str, str]) -> list[PublicParameter]:
    """LocalStack: write each public parameter the templates resolve under our own name."""
    if target.name != "localstack":
        return []
    wanted = public_parameters(app)
    if wanted and not environ.get(LAYER_ARN_ENV):
        names = ", ".join(sorted({p.name for p in wanted}))
        raise DeployFailed(
            f"LocalStack has no public SSM parameters ({names}): set {LAYER_ARN_ENV} to a Powertools "
            "layer version it can attach (`make layer TARGET=localstack` publishes one and prints it)"
        )
    if wanted and not LAYER_VERSION_ARN.fullmatch(environ[LAYER_ARN_ENV]):
        raise DeployFailed(f"{LAYER_ARN_ENV} is not a layer version ARN: {environ[LAYER_ARN_ENV]!r}")
    ssm = target.client("ssm")
    for parameter in wanted:
        ssm.put_parameter(
            Name=parameter.emulator_name, Value=environ[LAYER_ARN_ENV], Type="String", Overwrite=True
        )
    return wanted


def _run(command: Sequence[str], target: DeployTarget) -> None:
    print("$ " + " ".join(command), flush=True)
    code = subprocess.run(command, cwd=PROJECT_DIR, env=target.cli_env(), check=False).returncode  # noqa: S603
    if code != 0:
        raise DeployFailed(f"`{command[1]}` failed ({code})")


def _after_local(target: DeployTarget, *, deployed: bool) -> None:
    """Tell the local cloud to serve what is deployed now; derive its outputs.json from the CLI's."""
    if target.local_state is None or target.endpoint is None:
        return
    apis = control.refresh(target.endpoint)["apis"]
    path = target.local_state / "outputs.json"
    if not deployed:
        path.unlink(missing_ok=True)
        target.outputs_file.unlink(missing_ok=True)
        return
    cli_outputs = json.loads(target.outputs_file.read_text(encoding="utf-8"))
    endpoint = localcloud_outputs.Endpoint(target.endpoint, target.region)
    localcloud_outputs.write(
        localcloud_outputs.from_cli_outputs(cli_outputs, endpoint=endpoint, apis=apis), path
    )
    print(f"outputs in {target.outputs_file} (the CLI's) and {path} (with the local REST API URL)")


def deploy(target: DeployTarget, app: Path, environ: Mapping[str, str] | None = None) -> None:
    environ = os.environ if environ is None else environ
    if not (app / "manifest.json").is_file():
        raise DeployFailed(f"no cloud assembly in {app}: `make synth STAGE={target.stage}` first")
    if not stacks_of_stage(app, target.stage):
        raise DeployFailed(
            f"{app} is not an assembly of stage {target.stage}: `make synth STAGE={target.stage}`"
        )
    account = _account(target)
    print(f"deploying {app} to {target.describe(account)}", flush=True)
    if not _bootstrapped(target):
        print(f"no CDK bootstrap stack in {account}/{target.region}: bootstrapping", flush=True)
        _run([*cdk_command("bootstrap", target, app), f"aws://{account}/{target.region}"], target)
    overrides = _emulator_overrides(target, app, environ)
    target.outputs_file.parent.mkdir(parents=True, exist_ok=True)
    _run(cdk_command("deploy", target, app, parameters=overrides), target)
    _after_local(target, deployed=True)


def destroy(target: DeployTarget, app: Path) -> None:
    account = _account(target)
    print(f"destroying the stacks of {app} on {target.describe(account)}", flush=True)
    _run(cdk_command("destroy", target, app), target)
    target.outputs_file.unlink(missing_ok=True)
    _after_local(target, deployed=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.deploy", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("deploy", "destroy"))
    parser.add_argument(
        "--stage", required=True, help="the assembly's stage: dev, prod, local, dev-express, local-express"
    )
    parser.add_argument("--target", required=True, choices=TARGETS)
    parser.add_argument("--app", type=Path, default=PROJECT_DIR / "cdk.out", help="the synthesized assembly")
    parser.add_argument(
        "--localcloud-dir", type=Path, help="the local cloud's state (default $LOCALCLOUD_DIR)"
    )
    args = parser.parse_args(argv)
    try:
        target = resolve(args.target, args.stage, localcloud_dir=args.localcloud_dir)
        if args.action == "deploy":
            deploy(target, args.app.resolve())
        else:
            destroy(target, args.app.resolve())
    except DeployFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
