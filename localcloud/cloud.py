"""`LocalCloud`: the endpoint, the deployed stacks, the Lambda workers, the pollers and the REST API.

    with LocalCloud(Config.from_env(port=0)) as cloud:     # starts and deploys
        cloud.outputs.api_url, cloud.client("sqs"), cloud.workers()

`start()` + `deploy()` + `stop()` are the same steps one at a time. Only one local cloud can run in
a process: moto's backends are process-global.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import IO, Any

import boto3
from botocore.config import Config as BotoConfig

from localcloud import outputs as outputs_file
from localcloud import patches
from localcloud.apigw import RestApiHandler, RestApiServer, apis_from_template
from localcloud.config import ACCOUNT_ID, Config
from localcloud.deploy import Deployer, DeployReport, read_assembly
from localcloud.lambdas import LambdaRuntime
from localcloud.outputs import Outputs
from localcloud.pollers import PollerManager, client_factory
from localcloud.server import MotoEndpoint, PortInUseError, is_port_free
from localcloud.synth import ensure_assembly

logger = logging.getLogger("localcloud")

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
        self.apis: list[RestApiServer] = []
        self.report: DeployReport | None = None
        self._outputs: Outputs | None = None
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
            self._say(f"AWS endpoint on {endpoint_url} (region {self.config.region})")
        except BaseException:
            self.stop()
            raise
        return self

    def deploy(self, assembly: Path | None = None) -> Outputs:
        """Deploy a cloud assembly (default: the configured one, synthesized if needed)."""
        if self.endpoint is None or self.runtime is None or self._clients is None:
            raise RuntimeError("start() the local cloud first")
        directory = assembly or self.config.assembly or ensure_assembly(self.config, log=self._say)
        deployer = Deployer(self._clients, region=self.config.region, log=self._say)
        self.report = deployer.deploy(read_assembly(Path(directory)))
        for line in self.report.lines():
            self._say(line)
        self._serve_apis()
        self.pollers = PollerManager(endpoint=self.endpoint.url, region=self.config.region)
        self.pollers.start()
        for mapping in self.pollers.active():
            self._say(
                f"polling {mapping.queue_arn.rsplit(':', 1)[-1]} -> {mapping.function_arn.rsplit(':', 1)[-1]}"
            )
        if self.config.prewarm:
            self.prewarm()
        # Written last: `up` returns when this file appears, so everything above is ready.
        self._outputs = self._build_outputs()
        outputs_file.write(self._outputs, self.config.outputs_path)
        if self._outputs.api_url:
            self._say(f"REST API on {self._outputs.api_url}")
        self._say(f"outputs in {self.config.outputs_path}")
        return self._outputs

    def _serve_apis(self) -> None:
        if self.report is None or self._clients is None:
            raise RuntimeError("deploy first")
        cfn = self._clients("cloudformation")
        lambda_client = self._clients("lambda")  # boto3 clients are thread-safe for calls

        def invoke(function: str, event: dict[str, Any]) -> tuple[Any, str | None]:
            response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode("utf-8"))
            raw = response["Payload"].read()
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            return payload, response.get("FunctionError")

        port = self.config.rest_api_port
        for stack_name, template in self.report.templates.items():
            resources = cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
            # Resources moto skipped come back without ids: they are not needed here.
            resources = [r for r in resources if r.get("LogicalResourceId") and r.get("PhysicalResourceId")]
            physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}
            functions = {
                r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in resources
                if r.get("ResourceType") == "AWS::Lambda::Function"
            }
            for spec in apis_from_template(template, physical_ids=physical, function_names=functions):
                handler = RestApiHandler(
                    spec, invoke=invoke, account_id=ACCOUNT_ID, region=self.config.region
                )
                try:
                    server = RestApiServer(handler, port=port)
                except OSError as exc:
                    raise PortInUseError(f"REST API {spec.name}", port) from exc
                server.start()
                self.apis.append(server)
                port = server.port + 1 if port else 0

    def _build_outputs(self) -> Outputs:
        if self.endpoint is None or self.report is None:
            raise RuntimeError("deploy first")
        local_urls = {server.handler.spec.api_id: server.url for server in self.apis}
        pattern = re.compile(r"^https://([A-Za-z0-9]+)\.execute-api\.[^/]+/[^/]*/(.*)$")

        def localize(value: str) -> str:
            """Execute-api URLs of an API served here point at its local URL instead."""
            match = pattern.match(value)
            if match and match.group(1) in local_urls:
                return local_urls[match.group(1)] + match.group(2)
            return value

        stacks = {
            name: {key: localize(value) for key, value in values.items()}
            for name, values in self.report.outputs.items()
        }
        merged: dict[str, str] = {}
        for values in stacks.values():
            # CDK's own cross-stack exports (ExportsOutputRef..., ExportsOutputFnGetAtt...) are
            # plumbing, not outputs anyone reads; they stay under "stacks".
            merged.update(
                {key: value for key, value in values.items() if not key.startswith("ExportsOutput")}
            )
        return Outputs(
            endpoint=self.endpoint.url,
            api_url=self.apis[0].url if self.apis else None,
            region=self.config.region,
            outputs=merged,
            stacks=stacks,
        )

    def stop(self) -> None:
        """Stop pollers, workers, the REST API and the endpoint; forget moto's state."""
        global _running  # noqa: PLW0603
        if self.pollers is not None:
            self.pollers.stop()
            self.pollers = None
        if self.runtime is not None:
            self.runtime.close()
        for server in self.apis:
            server.stop()
        self.apis = []
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None
        if self.runtime is not None:
            patches.uninstall()
            patches.reset_moto()
            self.runtime = None
        try:
            if self._outputs is not None:
                self.config.outputs_path.unlink(missing_ok=True)
        finally:
            self._outputs = None
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
        if self._outputs is None:
            raise RuntimeError("nothing deployed yet")
        return self._outputs

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
            "api_url": self._outputs.api_url if self._outputs else None,
            "workers": self.workers(),
            "mappings": [
                {"uuid": m.uuid, "queue": m.queue_arn, "function": m.function_arn, "batch_size": m.batch_size}
                for m in (self.pollers.active() if self.pollers else [])
            ],
            "crash": self.config.crash_env(),
        }

    def _control(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The /_localcloud/ routes of the endpoint (see localcloud.control)."""
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
        if method == "POST" and route == "prewarm":
            results = self.prewarm()
            return 200, {**self.status(), "prewarmed": results}
        return 404, {"message": f"no control route {method} {path}"}


def running() -> LocalCloud | None:
    """The local cloud running in this process, if any."""
    return _running
