"""A deployed function as both clouds run it: its spec (from moto's Lambda backend in the local
cloud, from the template in the simulator) and the environment Lambda gives its code."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FunctionSpec:
    """Everything about a deployed function that decides how it is run."""

    name: str
    arn: str
    handler: str
    runtime: str
    timeout: int  # seconds, a whole number as Lambda's configuration has it
    memory_mb: int
    region: str
    environment: Mapping[str, str]  # the function's own variables, as its configuration has them
    code: bytes = field(default=b"", repr=False)  # the zipped asset (the simulator runs none)

    @property
    def code_digest(self) -> str:
        return hashlib.sha256(self.code).hexdigest()

    def fingerprint(self) -> str:
        """Changes when the code or configuration changes: the pool is then replaced."""
        parts = [
            self.code_digest,
            self.handler,
            str(self.timeout),
            str(self.memory_mb),
            json.dumps(dict(self.environment), sort_keys=True),
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def lambda_environment(spec: FunctionSpec, *, log_stream: str) -> dict[str, str]:
    """The variables Lambda sets for the function's code (what the context and Powertools read),
    then the function's own."""
    return {
        "AWS_REGION": spec.region,
        "AWS_DEFAULT_REGION": spec.region,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(int(spec.timeout)),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": log_stream,
        "_HANDLER": spec.handler,
        "TZ": ":UTC",
        **spec.environment,
    }
