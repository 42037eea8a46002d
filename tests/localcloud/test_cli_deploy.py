"""The CDK CLI's deploy path into a running local cloud: update, no change, destroy.

A copy of the project (app, infra, functions, Makefile, pyproject.toml; the toolchain and the lab
linked) gets a changed
handler and is deployed with `make deploy STAGE=local` into a local cloud that runs the session's
assembly: the next request runs the new code with no restart. The same assembly again is "no
changes"; `cdk destroy` leaves no stack of the stage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from ops.local import outputs, process

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
COPIED = (
    *("app.py", "cdk.json", "Makefile", "pyproject.toml"),
    *("requirements.txt", "requirements-dev.txt", "constraints.txt"),
)
LINKED = (".venv", "node_modules", "lab")
NEW_CODE = """

def handler(event, context):  # the redeploy test's new code
    return {"statusCode": 418, "headers": {}, "body": "new code"}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project as a user has it, in a directory of its own (the shared tree stays unchanged)."""
    copy = tmp_path_factory.mktemp("project")
    for name in COPIED:
        shutil.copy2(ROOT / name, copy / name)  # mtimes kept: the venv and node stamps stay newer
    for name in ("infra", "functions", "lib"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in LINKED:
        (copy / name).symlink_to(ROOT / name)
    return copy


@pytest.fixture(scope="module")
def cloud(local_assembly: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local cloud running the session's `local` assembly; yields its state directory."""
    state = tmp_path_factory.mktemp("deploy-localcloud")
    with process.background(state_dir=state, assembly=local_assembly):
        yield state


def make(project: Path, state: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LOCALCLOUD_", "AWS_"))}
    env["LOCALCLOUD_DIR"] = str(state)
    return subprocess.run(
        # -o: never rebuild the toolchain, which the copy links to the shared tree's
        ["make", "-o", ".venv/.installed", "-o", "node_modules/.installed", *targets],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def ops_deploy(action: str, project: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """What `make deploy|destroy STAGE=local` runs after `make synth`, on the copy's cdk.out."""
    app = str(project / "cdk.out")
    command = [sys.executable, "-m", "ops.deploy", action, "--stage", "local", "--target", "local"]
    return subprocess.run(
        [*command, "--app", app, "--localcloud-dir", str(state)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_changed_handler_redeploys_into_the_running_cloud_then_no_change_then_destroy(
    project: Path, cloud: Path
) -> None:
    before = outputs.load(cloud / "outputs.json")
    assert before.api_url is not None
    status, _ = get(before.api_url + "orders/o-unknown")
    assert status == 404

    # When a handler changes and `make deploy STAGE=local` runs against the running cloud
    with (project / "functions" / "orders" / "handlers" / "api.py").open("a") as module:
        module.write(NEW_CODE)
    deployed = make(project, cloud, "deploy", "STAGE=local")

    # Then the CLI updated the stacks through change sets, after printing the target
    # (the data stack changes too: the CLI's synth adds `aws:cdk:path` metadata the session's lacks)
    log = deployed.stdout + deployed.stderr
    assert deployed.returncode == 0, log
    assert log.index("target local: endpoint http://localhost:") < log.index("cdk deploy")
    assert "retrysafe-local-app | " in log
    assert "UPDATE_COMPLETE" in log
    # and the next request through the same REST API runs the new code, with no restart
    after = outputs.load(cloud / "outputs.json")
    assert after.api_url == before.api_url
    assert get(before.api_url + "orders/o-unknown") == (418, b"new code")

    # When the same assembly is deployed again: no changes
    again = ops_deploy("deploy", project, cloud)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "retrysafe-local-data (no changes)" in again.stdout + again.stderr
    assert "retrysafe-local-app (no changes)" in again.stdout + again.stderr

    # When the stage is destroyed: no stack of it is left, its API and outputs are gone
    destroyed = ops_deploy("destroy", project, cloud)
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    cfn = boto3.client(
        "cloudformation",
        endpoint_url=after.endpoint,
        region_name=after.region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    assert [stack["StackName"] for stack in cfn.describe_stacks()["Stacks"]] == ["CDKToolkit"]
    assert not (cloud / "outputs.json").exists()
    status = json.loads(urllib.request.urlopen(after.endpoint + "/_localcloud/status").read())
    assert status["apis"] == {}
