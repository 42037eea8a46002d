"""Deploy a CDK cloud assembly (`cdk.out`) through the local endpoint's CloudFormation.

What `cdk deploy` and the bootstrap stack would do, done with plain AWS API calls: the asset bucket
the templates reference, every file asset at its object key (directories zipped), the SSM parameters
the templates' SSM-typed parameters resolve, then CreateStack per stack in dependency order
(cross-stack references are Exports and Fn::ImportValue, which moto resolves). Resource types moto
cannot create are listed, each with whether the local cloud emulates it itself.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from localcloud import patches
from localcloud.config import ACCOUNT_ID

logger = logging.getLogger("localcloud.deploy")

BOOTSTRAP_VERSION = "30"  # what `cdk bootstrap` 2.x writes; templates check it is at least 6
PLACEHOLDER_LAYER = "localcloud-venv-layer"
PLACEHOLDER_VALUE = "localcloud-placeholder"

# Types moto's CloudFormation cannot create that the local cloud serves itself, and how.
EMULATED_TYPES = {
    "AWS::ApiGateway::Stage": "the local REST API serves the stage (name read from the template)",
    "AWS::ApiGateway::RequestValidator": "the local REST API validates required parameters and bodies",
    "AWS::ApiGateway::Model": "the local REST API checks request bodies against the model's JSON schema",
    "AWS::ApiGateway::GatewayResponse": "the local REST API renders its status, headers and template",
    "AWS::ApiGateway::Account": "no local effect (account-wide CloudWatch role)",
}
# Types moto creates but whose behaviour the local cloud adds.
ADDED_BEHAVIOUR = {
    "AWS::Lambda::Function": "code runs in a local worker process per function (moto would need Docker)",
    "AWS::Lambda::EventSourceMapping": "SQS pollers: batch size, visibility timeout, ReportBatchItemFailures",
    "AWS::ApiGateway::Method": "served over HTTP by the local REST API (moto cannot invoke AWS_PROXY)",
    "AWS::StepFunctions::StateMachine": "executions run by moto's interpreter (made visible to the API)",
}
KNOWN_GAPS = {
    "AWS::DynamoDB::Table": "TimeToLiveSpecification is stored but items never expire",
    "AWS::SQS::Queue": "SSE settings have no effect",
}


class DeployError(RuntimeError):
    """A stack failed to create; the message carries CloudFormation's reason."""


@dataclass(frozen=True)
class StackArtifact:
    artifact_id: str
    stack_name: str
    template_file: Path
    dependencies: tuple[str, ...]

    def template(self) -> dict[str, Any]:
        return dict(json.loads(self.template_file.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class FileAsset:
    asset_id: str
    source: Path
    packaging: str  # "zip" (a directory) or "file"
    destinations: tuple[tuple[str, str], ...]  # (bucket template, object key)


@dataclass(frozen=True)
class Assembly:
    directory: Path
    stacks: tuple[StackArtifact, ...]  # in deployment order
    assets: tuple[FileAsset, ...]
    skipped_assets: tuple[str, ...] = ()


@dataclass
class DeployReport:
    stacks: list[str] = field(default_factory=list)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    assets: list[str] = field(default_factory=list)
    ssm_parameters: dict[str, str] = field(default_factory=dict)
    not_created: dict[str, dict[str, int]] = field(default_factory=dict)  # stack -> type -> count
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """The human summary printed after a deploy."""
        out = [
            f"deployed {', '.join(self.stacks)} in {self.seconds:.1f}s ({len(self.assets)} asset(s) uploaded)"
        ]
        for name, value in self.ssm_parameters.items():
            out.append(f"  ssm parameter {name} = {value}")
        types: dict[str, int] = {}
        for per_stack in self.not_created.values():
            for kind, count in per_stack.items():
                types[kind] = types.get(kind, 0) + count
        if types:
            out.append("resource types moto cannot create (skipped by CloudFormation):")
            for kind in sorted(types):
                how = EMULATED_TYPES.get(kind, "not emulated: no local effect")
                out.append(f"  {kind} x{types[kind]}: {how}")
        present = {r.get("Type") for t in self.templates.values() for r in t.get("Resources", {}).values()}
        added = [kind for kind in ADDED_BEHAVIOUR if kind in present]
        if added:
            out.append("emulated by the local cloud on top of moto:")
            out += [f"  {kind}: {ADDED_BEHAVIOUR[kind]}" for kind in added]
        gaps = [kind for kind in KNOWN_GAPS if kind in present]
        if gaps:
            out.append("known gaps:")
            out += [f"  {kind}: {KNOWN_GAPS[kind]}" for kind in gaps]
        return out


def _order(stacks: dict[str, StackArtifact]) -> list[StackArtifact]:
    ordered: list[StackArtifact] = []
    state: dict[str, str] = {}

    def visit(artifact_id: str) -> None:
        if state.get(artifact_id) == "done":
            return
        if state.get(artifact_id) == "visiting":
            raise DeployError(f"dependency cycle at {artifact_id}")
        state[artifact_id] = "visiting"
        for dep in stacks[artifact_id].dependencies:
            visit(dep)
        state[artifact_id] = "done"
        ordered.append(stacks[artifact_id])

    for artifact_id in sorted(stacks):
        visit(artifact_id)
    return ordered


def read_assembly(directory: Path) -> Assembly:
    """Stacks in dependency order and file assets, from manifest.json and the *.assets.json files."""
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    artifacts: dict[str, Any] = manifest.get("artifacts", {})
    stack_ids = {key for key, value in artifacts.items() if value.get("type") == "aws:cloudformation:stack"}
    stacks = {}
    for artifact_id in stack_ids:
        artifact = artifacts[artifact_id]
        props = artifact.get("properties", {})
        stacks[artifact_id] = StackArtifact(
            artifact_id=artifact_id,
            stack_name=str(props.get("stackName") or artifact_id),
            template_file=directory / props["templateFile"],
            dependencies=tuple(dep for dep in artifact.get("dependencies", []) if dep in stack_ids),
        )
    assets: list[FileAsset] = []
    skipped: list[str] = []
    for artifact in artifacts.values():
        if artifact.get("type") != "cdk:asset-manifest":
            continue
        asset_manifest = json.loads((directory / artifact["properties"]["file"]).read_text(encoding="utf-8"))
        for asset_id, asset in asset_manifest.get("files", {}).items():
            source = asset.get("source", {})
            if "path" not in source:  # built by a command at publish time: nothing to upload locally
                skipped.append(asset_id)
                continue
            assets.append(
                FileAsset(
                    asset_id=asset_id,
                    source=directory / source["path"],
                    packaging=str(source.get("packaging", "file")),
                    destinations=tuple(
                        (str(dest["bucketName"]), str(dest["objectKey"]))
                        for dest in asset.get("destinations", {}).values()
                    ),
                )
            )
        skipped += list(asset_manifest.get("dockerImages", {}))
    return Assembly(directory, tuple(_order(stacks)), tuple(assets), tuple(skipped))


def zip_directory(directory: Path) -> bytes:
    """A deterministic zip of a directory asset, as the CDK CLI packages it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                info = zipfile.ZipInfo(
                    path.relative_to(directory).as_posix(), date_time=(1980, 1, 1, 0, 0, 0)
                )
                info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def substitute(value: str, *, region: str, account_id: str = ACCOUNT_ID) -> str:
    pseudo = {
        "AWS::AccountId": account_id,
        "AWS::Region": region,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
    }
    return re.sub(r"\$\{(AWS::[A-Za-z]+)\}", lambda m: pseudo.get(m.group(1), m.group(0)), value)


def unsupported_types(template: dict[str, Any], supported: Iterable[str]) -> dict[str, int]:
    known = set(supported)
    counts: dict[str, int] = {}
    for resource in template.get("Resources", {}).values():
        kind = str(resource.get("Type", ""))
        if kind not in known:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def moto_supported_types() -> set[str]:
    from moto.cloudformation.parsing import get_model_map  # noqa: PLC0415 - moto is heavy; only here

    return set(get_model_map())


class Deployer:
    """Uploads assets and creates stacks; `clients(service)` gives boto3 clients for the endpoint."""

    def __init__(
        self, clients: Callable[[str], Any], *, region: str, log: Callable[[str], None] = print
    ) -> None:
        self._clients = clients
        self._region = region
        self._log = log
        self._layer_arn: str | None = None

    # -- bootstrap ------------------------------------------------------------------------
    def _ensure_bucket(self, bucket: str) -> None:
        s3 = self._clients("s3")
        try:
            if self._region == "us-east-1":
                s3.create_bucket(Bucket=bucket)
            else:
                s3.create_bucket(
                    Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": self._region}
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise

    def upload_assets(self, assembly: Assembly, report: DeployReport) -> None:
        s3 = self._clients("s3")
        buckets: set[str] = set()
        for asset in assembly.assets:
            body = zip_directory(asset.source) if asset.packaging == "zip" else asset.source.read_bytes()
            for bucket_template, key in asset.destinations:
                bucket = substitute(bucket_template, region=self._region)
                if bucket not in buckets:
                    self._ensure_bucket(bucket)
                    buckets.add(bucket)
                s3.put_object(Bucket=bucket, Key=substitute(key, region=self._region), Body=body)
            report.assets.append(asset.asset_id)
        for asset_id in assembly.skipped_assets:
            self._log(f"warning: asset {asset_id} is built by a command or is an image: not uploaded")

    def _placeholder_layer(self) -> str:
        """A layer version the Powertools layer ARN can point at: the workers use the venv's."""
        if self._layer_arn is None:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr(
                    "python/LOCALCLOUD.txt", "The local cloud's workers use the venv's packages.\n"
                )
            self._layer_arn = self._clients("lambda").publish_layer_version(
                LayerName=PLACEHOLDER_LAYER,
                Description="stands in for a public layer (Powertools); workers import from the venv",
                Content={"ZipFile": buffer.getvalue()},
                CompatibleRuntimes=["python3.11", "python3.12", "python3.13"],
            )["LayerVersionArn"]
        return self._layer_arn

    def _ssm_value(self, name: str) -> str:
        if "bootstrap" in name and name.endswith("/version"):
            return BOOTSTRAP_VERSION
        lowered = name.lower()
        if "layer" in lowered or "powertools" in lowered:
            return self._placeholder_layer()
        return PLACEHOLDER_VALUE

    def ssm_parameters(self, template: dict[str, Any], report: DeployReport) -> None:
        """Create the SSM parameters the template's SSM-typed parameters resolve at deploy time."""
        ssm = self._clients("ssm")
        for parameter in template.get("Parameters", {}).values():
            kind = str(parameter.get("Type", ""))
            name = parameter.get("Default")
            if not kind.startswith("AWS::SSM::Parameter::Value") or not name:
                continue
            try:
                ssm.get_parameter(Name=name)
                continue
            except ClientError:
                value = self._ssm_value(name)
            if name.lower().lstrip("/").startswith(("aws", "ssm")):  # reserved: not through the API
                patches.put_public_ssm_parameter(name, value, region=self._region, account_id=ACCOUNT_ID)
            else:
                ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)
            report.ssm_parameters[name] = value

    # -- stacks ---------------------------------------------------------------------------
    def create_stack(self, artifact: StackArtifact, report: DeployReport, supported: set[str]) -> None:
        cfn = self._clients("cloudformation")
        template = artifact.template()
        report.templates[artifact.stack_name] = template
        missing = unsupported_types(template, supported)
        if missing:
            report.not_created[artifact.stack_name] = missing
        self.ssm_parameters(template, report)
        try:
            cfn.create_stack(
                StackName=artifact.stack_name,
                TemplateBody=json.dumps(template),
                Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
            )
        except ClientError as exc:
            raise DeployError(f"{artifact.stack_name}: {exc}") from exc
        stack = cfn.describe_stacks(StackName=artifact.stack_name)["Stacks"][0]
        status = stack["StackStatus"]
        if status != "CREATE_COMPLETE":
            events = cfn.describe_stack_events(StackName=artifact.stack_name)["StackEvents"]
            reasons = [
                f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason')}"
                for e in events
                if "FAILED" in e["ResourceStatus"]
            ]
            raise DeployError(
                f"{artifact.stack_name} ended {status}: {stack.get('StackStatusReason')} {reasons}"
            )
        report.stacks.append(artifact.stack_name)
        report.outputs[artifact.stack_name] = {
            o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])
        }

    def deploy(self, assembly: Assembly) -> DeployReport:
        started = time.monotonic()
        report = DeployReport()
        if not assembly.stacks:
            raise DeployError(f"no stacks in {assembly.directory}/manifest.json")
        self.upload_assets(assembly, report)
        supported = moto_supported_types()
        for artifact in assembly.stacks:
            self.create_stack(artifact, report, supported)
        report.seconds = time.monotonic() - started
        return report
