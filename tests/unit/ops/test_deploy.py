"""One deploy path for every target: what `make deploy` resolves and hands the CDK CLI, offline.

Nothing here contacts a target: LocalStack cannot run on these machines, AWS must not be touched.
The local cloud path runs for real in tests/localcloud/test_cli_deploy.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.synth import synth_env
from ops import deploy
from ops.local import outputs as localcloud_outputs
from ops.target import Target, TargetNotFound, outputs_file


def test_localstack_follows_localstacks_conventions() -> None:
    # Given nothing but the target's name
    target = deploy.resolve("localstack", "dev", environ={})

    # Then LocalStack's default endpoint, its test credentials and a default region
    assert target.endpoint == "http://localhost.localstack.cloud:4566"
    assert target.region == "us-east-1"
    assert target.env["AWS_ENDPOINT_URL"] == target.endpoint
    assert (target.env["AWS_ACCESS_KEY_ID"], target.env["AWS_SECRET_ACCESS_KEY"]) == ("test", "test")
    assert target.outputs_file == Path(".cdk-outputs/localstack-dev.json")


def test_localstack_takes_the_endpoint_region_and_credentials_the_environment_names() -> None:
    environ = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "mine",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_PROFILE": "prod-admin",
    }

    target = deploy.resolve("localstack", "dev", environ=environ)

    assert (target.endpoint, target.region) == ("http://127.0.0.1:4566", "eu-west-1")
    assert target.env["AWS_ACCESS_KEY_ID"] == "mine"
    # a profile in the environment can never redirect an emulator deploy to an account
    assert "AWS_PROFILE" not in target.cli_env()


def test_no_two_targets_share_the_clis_cache_of_accounts(tmp_path: Path) -> None:
    # Given the local cloud and LocalStack, which take the same access key for two accounts
    endpoint = localcloud_outputs.Endpoint("http://localhost:4599", "us-east-1")
    localcloud_outputs.write_endpoint(endpoint, tmp_path)
    targets = [
        deploy.resolve("local", "local", localcloud_dir=tmp_path),
        deploy.resolve("localstack", "dev", environ={}),
        deploy.resolve("aws", "dev", environ={"AWS_REGION": "eu-west-1"}),
    ]
    local, localstack, _ = targets
    assert local.env["AWS_ACCESS_KEY_ID"] == localstack.env["AWS_ACCESS_KEY_ID"]

    # When the CLI runs for each of them, and for `make synth`
    homes = [Path(target.cli_env()["CDK_HOME"]) for target in targets]
    homes.append(Path(synth_env(deploy.PROJECT_DIR)["CDK_HOME"]))

    # Then each keeps the key -> account cache in a file of its own, so one target's answer is
    # never taken for another's (IncorrectDefaultCredentials at bootstrap)
    caches = {home / "cache" / "accounts_partitions.json" for home in homes}
    assert len(caches) == len(homes)


def test_aws_uses_the_sdks_own_credentials_and_needs_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    target = deploy.resolve("aws", "prod", environ={"AWS_REGION": "eu-central-1"})

    assert (target.endpoint, target.region, dict(target.env)) == (None, "eu-central-1", {})
    assert target.outputs_file == Path(".cdk-outputs/aws-prod.json")
    with pytest.raises(deploy.DeployFailed, match="no AWS region"):
        deploy.resolve("aws", "prod", environ={})


def test_the_local_cloud_is_found_by_its_state_directory(tmp_path: Path) -> None:
    with pytest.raises(deploy.DeployFailed, match="make local-up"):
        deploy.resolve("local", "local", localcloud_dir=tmp_path)
    endpoint = localcloud_outputs.Endpoint("http://localhost:4599", "us-east-1")
    localcloud_outputs.write_endpoint(endpoint, tmp_path)

    target = deploy.resolve("local", "local", localcloud_dir=tmp_path)

    assert target.endpoint == "http://localhost:4599"
    assert target.outputs_file == tmp_path / "cdk-outputs.json"
    assert target.local_state == tmp_path


def test_deploy_runs_the_cli_on_the_assembly_with_an_outputs_file(local_assembly: Path) -> None:
    target = deploy.resolve("localstack", "local", environ={})
    parameters = deploy.public_parameters(local_assembly)

    command = deploy.cdk_command("deploy", target, local_assembly, parameters=parameters)

    assert command[:4] == [str(deploy.CLI), "deploy", "--app", str(local_assembly)]
    assert "--all" in command
    assert command[command.index("--require-approval") + 1] == "never"
    assert command[command.index("--outputs-file") + 1] == str(target.outputs_file)
    assert "synth" not in command  # the assembly is deployed as synthesized: no second synth
    # the public Powertools parameter (absent on emulators) is named as the stack parameter's override
    [powertools] = parameters
    assert powertools.stack == "retrysafe-local-app"
    assert powertools.name.startswith("/aws/service/powertools/python/")
    override = command[command.index("--parameters") + 1]
    assert override == f"retrysafe-local-app:{powertools.key}=/retrysafe/emulator/{powertools.name[13:]}"


def test_destroy_and_bootstrap_commands(local_assembly: Path) -> None:
    target = deploy.resolve("localstack", "local", environ={})

    assert deploy.cdk_command("destroy", target, local_assembly)[1:] == [
        "destroy",
        "--app",
        str(local_assembly),
        "--all",
        "--force",
    ]
    bootstrap = deploy.cdk_command("bootstrap", target, local_assembly)
    assert bootstrap[1:] == ["bootstrap", "--app", str(local_assembly)]


def test_localstack_without_a_layer_arn_stops_before_deploying(local_assembly: Path) -> None:
    target = deploy.resolve("localstack", "local", environ={})

    with pytest.raises(deploy.DeployFailed, match="POWERTOOLS_LAYER_ARN"):
        deploy._emulator_overrides(target, local_assembly, {})
    # nor with something else in it, e.g. what a sub-make printed around `make layer`'s ARN
    arn = "arn:aws:lambda:us-east-1:000000000000:layer:retrysafe-powertools:1"
    with pytest.raises(deploy.DeployFailed, match="not a layer version ARN"):
        deploy._emulator_overrides(target, local_assembly, {"POWERTOOLS_LAYER_ARN": f"make[1]: ...\n{arn}"})
    assert deploy.LAYER_VERSION_ARN.fullmatch(arn)


def test_the_target_is_described_before_deploying() -> None:
    target = deploy.resolve("localstack", "dev", environ={})

    assert target.describe("000000000000") == (
        "target localstack: endpoint http://localhost.localstack.cloud:4566, account 000000000000, "
        "region us-east-1, stage dev"
    )


def test_ops_tools_read_the_outputs_the_cli_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a stage deployed to AWS: the CLI's outputs file
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRYSAFE_TARGET", "aws")
    monkeypatch.setenv("RETRYSAFE_STAGE", "dev")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(TargetNotFound, match="make deploy STAGE=dev TARGET=aws"):
        Target.resolve()
    path = outputs_file("aws", "dev")
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "retrysafe-dev-data": {"OrdersTableName": "retrysafe-dev-orders", "ExportsOutputRefX": "x"},
                "retrysafe-dev-app": {"ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com/dev/"},
            }
        )
    )

    # When an ops tool resolves its target
    target = Target.resolve()

    # Then it has every stack's outputs, no endpoint (AWS itself) and the SDK's region
    assert target.outputs == {
        "OrdersTableName": "retrysafe-dev-orders",
        "ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com/dev/",
    }
    assert (target.endpoint_url, target.region, target.local) == (None, "eu-west-1", False)
