"""`LocalCloud`: the endpoint, the Lambda workers, the pollers and the REST API; the CDK CLI deploys.

    with LocalCloud(Config.from_env(port=0)) as cloud:     # starts, then `cdk deploy`s the assembly
        cloud.outputs.api_url, cloud.client("sqs"), cloud.workers()

`start()` + `deploy()` + `stop()` are the same steps one at a time. `deploy()` runs the same
`python -m ops.deploy deploy --target local` as `make deploy STAGE=local`: the CDK CLI bootstraps
the endpoint when needed and deploys every stack through CloudFormation change sets; it then asks
this cloud to `refresh()` (serve the REST APIs now deployed) and writes `outputs.json`. Only one
local cloud can run in a process: moto's backends are process-global.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import IO, Any

import boto3
from botocore.config import Config as BotoConfig

from emulator import project
from emulator.apigw_template import RestApiSpec, apis_from_template
from emulator.config import ACCOUNT_ID
from emulator.synth import synth_env
from localcloud import patches
from localcloud.apigw import RestApiHandler
from localcloud.apigw_server import RestApiServer
from localcloud.config import Config
from localcloud.lambdas import LambdaRuntime
from localcloud.pollers import PollerManager, client_factory
from localcloud.server import MotoEndpoint, PortInUseError, is_port_free
from localcloud.synth import ensure_assembly
from ops.local import outputs as outputs_file
from ops.local.outputs import Endpoint, Outputs

logger = logging.getLogger("localcloud")

PROJECT_DIR = project.root()
STAND_IN_LAYER = "localcloud-venv-layer"
# Stacks in these states hold what is deployed; a REST API of any other stack is not served.
DEPLOYED_STATES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")


class DeployError(RuntimeError):
    """`cdk deploy` into the local cloud failed; its output was printed above."""


_running_lock = threading.Lock()
_running: LocalCloud | None = None


def _check_port(port: int, what: str) -> None:
    if port and not is_port_free(port):
        raise PortInUseError(what, port)


class LocalCloud:
    """One running local cloud. Not reentrant; one per process."""

    def __init__(self, config: Config | None = None, *, console: IO[str] | None = None) -> None:
        self.config = config or Config.from_env()
        self._console = console
        self.endpoint: MotoEndpoint | None = None
        self.runtime: LambdaRuntime | None = None
        self.pollers: PollerManager | None = None
        self.apis: dict[str, RestApiServer] = {}  # REST API id -> its server
        self._api_lock = threading.Lock()
        self._clients = None

    # -- lifecycle --------------------------------------------------------------------------
    def _say(self, message: str) -> None:
        logger.info(message)
        if self._console is not None:
            self._console.write(message + "\n")
            self._console.flush()

    def start(self) -> LocalCloud:
        global _running  # noqa: PLW0603 - moto is process-global, so is "the" local cloud
        with _running_lock:
            if _running is not None:
                raise RuntimeError("a local cloud is already running in this process")
            _running = self
        try:
            _check_port(self.config.rest_api_port, "REST API")
            self.config.state_dir.mkdir(parents=True, exist_ok=True)
            self.endpoint = MotoEndpoint(self.config.port, control=self._control)
            endpoint_url = self.endpoint.url
            self.runtime = LambdaRuntime(
                state_dir=self.config.state_dir,
                endpoint=endpoint_url,
                max_workers=self.config.max_workers,
                idle_seconds=self.config.idle_seconds,
                extra_env={**self.config.extra_worker_env, **self.config.crash_env()},
                console=self._console if self.config.live_log else None,
            )
            patches.install(self.runtime)
            self.endpoint.start()
            self._clients = client_factory(endpoint_url, self.config.region)  # type: ignore[assignment]
            patches.serve_public_layer(self._publish_stand_in_layer())
            self.pollers = PollerManager(endpoint=endpoint_url, region=self.config.region)
            self.pollers.start()  # mappings are picked up as deploys create them
            outputs_file.write_endpoint(Endpoint(endpoint_url, self.config.region), self.config.state_dir)
            self._say(f"AWS endpoint on {endpoint_url} (region {self.config.region})")
        except BaseException:
            self.stop()
            raise
        return self

    def _publish_stand_in_layer(self) -> str:
        """The layer version the public Powertools parameters resolve to (see patches #5)."""
        if self._clients is None:
            raise RuntimeError("start() the local cloud first")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("python/LOCALCLOUD.txt", "The local cloud's workers use the venv's packages.\n")
        return str(
            self._clients("lambda").publish_layer_version(
                LayerName=STAND_IN_LAYER,
                Description="stands in for the public Powertools layer; workers import it from the venv",
                Content={"ZipFile": buffer.getvalue()},
            )["LayerVersionArn"]
        )

    def deploy(self, assembly: Path | None = None) -> Outputs:
        """`cdk deploy` an assembly (default: the configured one, synthesized if needed) into this
        cloud, as `make deploy STAGE=local` does; its output goes to the console."""
        if self.endpoint is None:
            raise RuntimeError("start() the local cloud first")
        directory = assembly or self.config.assembly or ensure_assembly(self.config, log=self._say)
        command = [
            sys.executable,
            "-m",
            "ops.deploy",
            "deploy",
            "--target",
            "local",
            "--stage",
            self.config.stage,
            "--app",
            str(Path(directory).resolve()),
            "--localcloud-dir",
            str(self.config.state_dir.resolve()),
        ]
        with subprocess.Popen(  # noqa: S603 - our own module
            command,
            cwd=PROJECT_DIR,
            env=synth_env(PROJECT_DIR),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as deploying:
            assert deploying.stdout is not None
            for line in deploying.stdout:  # the CLI's own output: stack events, outputs
                self._say(line.rstrip("\n"))
        if deploying.returncode != 0:
            raise DeployError(f"`{' '.join(command)}` failed ({deploying.returncode})")
        if self.config.prewarm:
            self.prewarm()
        return self.outputs

    def refresh(self) -> dict[str, str]:
        """Serve the REST APIs of every deployed stack (new or changed ones restart on the port
        they had, removed ones stop); returns REST API id -> its local URL."""
        if self._clients is None:
            raise RuntimeError("start() the local cloud first")
        cfn = self._clients("cloudformation")
        specs: dict[str, RestApiSpec] = {}
        for stack in cfn.describe_stacks()["Stacks"]:
            if stack["StackStatus"] not in DEPLOYED_STATES:
                continue
            name = stack["StackName"]
            body = cfn.get_template(StackName=name)["TemplateBody"]
            if "AWS::ApiGateway::RestApi" not in json.dumps(body):
                continue  # no REST API (the CDK bootstrap stack's template is not even JSON)
            template = json.loads(body) if isinstance(body, str) else body
            resources = cfn.describe_stack_resources(StackName=name)["StackResources"]
            # Resources moto skipped come back without ids: they are not needed here.
            physical = {
                r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in resources
                if r.get("LogicalResourceId") and r.get("PhysicalResourceId")
            }
            functions = {
                r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in resources
                if r.get("ResourceType") == "AWS::Lambda::Function" and r.get("PhysicalResourceId")
            }
            for spec in apis_from_template(template, physical_ids=physical, function_names=functions):
                specs[spec.api_id] = spec
        with self._api_lock:
            for api_id in [api_id for api_id in self.apis if api_id not in specs]:
                self.apis.pop(api_id).stop()
                self._say(f"REST API {api_id} removed")
            for api_id, spec in specs.items():
                running = self.apis.get(api_id)
                if running is not None and running.handler.spec == spec:
                    continue
                if running is not None:
                    running.stop()
                self.apis[api_id] = self._serve_api(spec, running.port if running else None)
                self._say(f"REST API {spec.name} on {self.apis[api_id].url}")
            return {api_id: server.url for api_id, server in self.apis.items()}

    def _serve_api(self, spec: RestApiSpec, port: int | None) -> RestApiServer:
        lambda_client = self._clients("lambda") if self._clients else None  # thread-safe for calls

        def invoke(function: str, event: dict[str, Any]) -> tuple[Any, str | None]:
            assert lambda_client is not None
            response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode("utf-8"))
            raw = response["Payload"].read()
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            return payload, response.get("FunctionError")

        if port is None:  # the first API on the configured port, the next ones after it
            taken = [server.port for server in self.apis.values()]
            base = self.config.rest_api_port
            port = (max(taken) + 1 if taken else base) if base else 0
        handler = RestApiHandler(spec, invoke=invoke, account_id=ACCOUNT_ID, region=self.config.region)
        try:
            server = RestApiServer(handler, port=port)
        except OSError as exc:
            raise PortInUseError(f"REST API {spec.name}", port) from exc
        server.start()
        return server

    def stop(self) -> None:
        """Stop pollers, workers, the REST API and the endpoint; forget moto's state."""
        global _running  # noqa: PLW0603
        if self.pollers is not None:
            self.pollers.stop()
            self.pollers = None
        if self.runtime is not None:
            self.runtime.close()
        with self._api_lock:
            for server in self.apis.values():
                server.stop()
            self.apis = {}
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None
        if self.runtime is not None:
            patches.uninstall()
            patches.reset_moto()
            self.runtime = None
        try:
            for path in (self.config.outputs_path, self.config.cli_outputs_path):
                path.unlink(missing_ok=True)
            (self.config.state_dir / outputs_file.ENDPOINT_FILE).unlink(missing_ok=True)
        finally:
            with _running_lock:
                if _running is self:
                    _running = None

    def __enter__(self) -> LocalCloud:
        self.start()
        try:
            self.deploy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- for clients, demo, e2e and chaos ----------------------------------------------------
    @property
    def outputs(self) -> Outputs:
        """What the last deploy wrote (`outputs.json`)."""
        try:
            return outputs_file.load(self.config.outputs_path)
        except FileNotFoundError:
            raise RuntimeError("nothing deployed yet") from None

    def client(self, service: str) -> Any:
        """A boto3 client for this local cloud."""
        if self.endpoint is None:
            raise RuntimeError("the local cloud is not running")
        return boto3.client(
            service,
            endpoint_url=self.endpoint.url,
            region_name=self.config.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto accepts any credentials
            config=BotoConfig(read_timeout=960, retries={"max_attempts": 0, "mode": "standard"}),
        )

    def prewarm(self) -> dict[str, str | None]:
        """Start one worker per deployed function now, so the first calls skip the cold start."""
        if self.runtime is None:
            raise RuntimeError("the local cloud is not running")
        specs = patches.deployed_functions(region=self.config.region, account_id=ACCOUNT_ID)
        started = time.monotonic()
        results = self.runtime.prewarm(specs)
        failed = {name: error for name, error in results.items() if error}
        self._say(f"prewarmed {len(results) - len(failed)} function(s) in {time.monotonic() - started:.1f}s")
        for name, error in failed.items():
            self._say(f"  {name}: init failed: {error}")
        return results

    def workers(self) -> dict[str, list[int]]:
        """Live Lambda worker process ids by function name."""
        return self.runtime.workers() if self.runtime else {}

    def set_crash_points(
        self, crash_points: str | None, state_dir: Path | None = None, mode: str | None = None
    ) -> None:
        """Switch crash injection for the workers started from now on (warm ones are retired)."""
        self.config = self.config.with_crash_points(crash_points, state_dir=state_dir, mode=mode)
        if self.runtime is not None:
            self.runtime.set_extra_env({**self.config.extra_worker_env, **self.config.crash_env()})

    def status(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint.url if self.endpoint else None,
            "apis": {api_id: server.url for api_id, server in self.apis.items()},
            "workers": self.workers(),
            "mappings": [
                {"uuid": m.uuid, "queue": m.queue_arn, "function": m.function_arn, "batch_size": m.batch_size}
                for m in (self.pollers.active() if self.pollers else [])
            ],
            "crash": self.config.crash_env(),
            # moto, the REST API, the pollers and Step Functions share this process (and its GIL);
            # the Lambda workers are processes of their own. `make load` reports it per entity.
            "cpu_seconds": round(time.process_time(), 3),
        }

    def _control(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The /_localcloud/ routes of the endpoint (see ops.local.control)."""
        route = path.removeprefix("/_localcloud/")
        if method == "GET" and route == "status":
            return 200, self.status()
        if method == "POST" and route == "crash-points":
            try:
                document = json.loads(body or b"{}")
            except ValueError:
                return 400, {"message": "body must be JSON"}
            state_dir = document.get("state_dir")
            self.set_crash_points(
                document.get("crash_points"), Path(state_dir) if state_dir else None, document.get("mode")
            )
            return 200, self.status()
        if method == "POST" and route == "refresh":
            return 200, {**self.status(), "apis": self.refresh()}
        if method == "POST" and route == "prewarm":
            results = self.prewarm()
            return 200, {**self.status(), "prewarmed": results}
        return 404, {"message": f"no control route {method} {path}"}


def running() -> LocalCloud | None:
    """The local cloud running in this process, if any."""
    return _running
