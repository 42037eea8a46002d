"""boto3 clients for the chaos clouds, built once per process."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore import UNSIGNED
from botocore.config import Config

from simulator.events import REGION


class ClientPool:
    """boto3 clients, built once per process and reused by every moto world.

    Building a client costs 50-80 ms (endpoint rules); the harness builds one per call and moto's
    Step Functions interpreter one per task, which dominated a schedule. moto intercepts at the
    botocore level, so a client outlives the `mock_aws` it was built in. A function's clients are
    instrumented again by each world's `FunctionPlan` (which replaces the previous hooks).
    """

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, owner: str, service: str, *, config: Config | None = None, **kwargs: Any) -> Any:
        with self._lock:
            client = self._clients.get((owner, service))
            if client is None:
                # Unsigned: moto checks no signature (it reads the account from the access key,
                # and answers the default account, ours, without one), and SigV4 was ~7 % of a
                # schedule's CPU.
                unsigned = Config(signature_version=UNSIGNED)
                config = unsigned if config is None else config.merge(unsigned)
                client = boto3.client(service, region_name=REGION, config=config, **kwargs)
                self._clients[(owner, service)] = client
            return client

    def for_step_functions(self, region: str, service: str, state_credentials: Any = None) -> Any:  # noqa: ARG002
        return self.get(
            f"sfn-{region}",
            service,
            aws_access_key_id="ak",
            aws_secret_access_key="sk",  # noqa: S106 - moto's own fake credentials
            config=Config(parameter_validation=False, retries={"max_attempts": 0, "total_max_attempts": 1}),
        )


POOL = ClientPool()
