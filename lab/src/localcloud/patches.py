"""Every change the local cloud makes to moto 5.2.5, each with what moto lacks: 1-8 here, the
CloudFormation ones (9-13) in `patches_cfn`, DynamoDB's hot paths (14-15) in `patches_dynamo`,
work moto repeats at every request (16-21) in `patches_speed`, Express workflows as AWS runs them
(E1-E5) in `patches_express`.

`install(runtime)` applies them all once per process (idempotent); `uninstall()` restores moto.
Nothing else in `localcloud` reaches into moto's internals: everything else goes through the
endpoint's AWS APIs, and stacks are deployed by the CDK CLI (`python -m ops.deploy`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from moto.awslambda import models as lambda_models
from moto.core.utils import utcnow
from moto.sqs import models as sqs_models
from moto.ssm import models as ssm_models
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions.parser import models as sfn_parser_models

from emulator import patches_dynamo, patches_express, patches_speed
from emulator.functions import FunctionSpec
from localcloud import patches_cfn
from localcloud.lambdas import LambdaRuntime

logger = logging.getLogger("localcloud.patches")

_lock = threading.Lock()
_runtime: LambdaRuntime | None = None
_originals: dict[str, Any] = {}


def _spec(fn: Any) -> FunctionSpec:
    env = {str(key): str(value) for key, value in (fn.environment_vars or {}).items()}
    return FunctionSpec(
        name=fn.function_name,
        arn=fn.function_arn,
        handler=fn.handler or "",
        runtime=fn.run_time or "python3.11",
        timeout=int(fn.timeout or 3),
        memory_mb=int(fn.memory_size or 128),
        region=fn.region,
        environment=env,
        code=fn.code_bytes or b"",
    )


# 1. moto runs function code only in Docker (`_invoke_lambda` starts a container; without a Docker
#    engine it returns "error running docker"). Direct invokes, moto's event source mappings and
#    Step Functions Lambda tasks all end up here, so this one method is where code runs: in the
#    function's own warm worker process (localcloud.lambdas).
def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
    runtime = _runtime
    if runtime is None:
        return (
            json.dumps({"errorType": "Lambda.ServiceException", "errorMessage": "no local runtime"}),
            True,
            "",
        )
    if isinstance(event, str | bytes):  # moto passes the raw body "{}" when the payload is empty
        with contextlib.suppress(ValueError):
            event = json.loads(event or "{}")
    result = runtime.invoke(_spec(self), event)
    if result.logs:
        try:
            self.save_logs(result.logs)  # also to moto's CloudWatch Logs, as Lambda does
        except Exception:
            logger.debug("could not store logs of %s", self.function_name, exc_info=True)
    return result.payload, result.errored, result.logs


# 2. moto's `invoke` runs InvocationType=Event synchronously inside the request and marks every
#    function error "Handled". Lambda queues an Event invocation and answers 202 at once, and reports
#    errors raised by the function as "Unhandled". (Lambda's two retries of a failed async call are
#    not emulated.)
def _invoke(self: Any, body: str, request_headers: Any, response_headers: Any) -> str | bytes:
    event = json.loads(body) if body else {}
    if request_headers.get("x-amz-invocation-type", "RequestResponse") == "Event":
        threading.Thread(target=self._invoke_lambda, args=(event,), daemon=True).start()
        return ""
    payload, errored, logs = self._invoke_lambda(event=event)
    if errored:
        response_headers["x-amz-function-error"] = "Unhandled"
    response_headers["x-amz-log-result"] = base64.b64encode(logs.encode("utf-8")).decode("ascii")
    return payload.encode("utf-8")


# 3. moto fires an SQS event source mapping synchronously inside SendMessage (no poller, receive
#    count always 1, ReportBatchItemFailures ignored). The queue's mapping table is made write-only
#    so SendMessage never sees a mapping; `localcloud.pollers` polls each mapping as Lambda does.
def _no_mappings(_queue: Any) -> dict[str, Any]:
    return {}


def _drop_mapping(_queue: Any, _value: Any) -> None:
    return None


# 4. CloudFormation creates state machines in `moto.stepfunctions.models.stepfunctions_backends`,
#    but with execution switched on the API (ListStateMachines, StartExecution) reads
#    `stepfunctions_parser_backends`. The CloudFormation model looks the backend up by that module
#    name at call time, so pointing the name at the parser backends makes them one.
def _patch_stepfunctions() -> None:
    _originals["sfn_backends"] = sfn_models.stepfunctions_backends
    sfn_models.stepfunctions_backends = sfn_parser_models.stepfunctions_parser_backends  # type: ignore[assignment]


# 5. CDK templates resolve the Powertools layer ARN from the public SSM parameter
#    /aws/service/powertools/... at deploy time. moto ships none of those, refuses to create names
#    under /aws (reserved, as on AWS), and its CloudFormation resolves an SSM-typed parameter's
#    default even when the deploy overrides it, so no template using one could deploy. The local
#    cloud answers every name under that path with its stand-in layer (`serve_public_layer`), as
#    AWS answers with the real one; workers import Powertools from the venv.
POWERTOOLS_PARAMETER_PREFIX = "/aws/service/powertools/"
_public_layer: dict[str, str] = {}  # "arn": the stand-in layer version


def serve_public_layer(layer_arn: str) -> None:
    """Answer the public Powertools layer parameters with this layer version's ARN."""
    _public_layer["arn"] = layer_arn


def _public_parameter(name: str, account_id: str) -> Any:
    return ssm_models.Parameter(  # type: ignore[abstract]
        account_id=account_id,
        name=name,
        value=_public_layer["arn"],
        parameter_type="String",
        description="the local cloud's stand-in for the public Powertools layer",
        allowed_pattern=None,
        keyid=None,
        last_modified_date=utcnow(),
        version=1,
        data_type="text",
    )


def _patch_public_parameters() -> None:
    original = ssm_models.SimpleSystemManagerBackend.get_parameter
    _originals["get_parameter"] = original

    def get_parameter(self: Any, name: str) -> Any:
        found = original(self, name)
        if found is None and name.startswith(POWERTOOLS_PARAMETER_PREFIX) and "arn" in _public_layer:
            return _public_parameter(name, self.account_id)
        return found

    ssm_models.SimpleSystemManagerBackend.get_parameter = get_parameter  # type: ignore[method-assign]


# 6. moto's CloudFormation logs a warning and a UserWarning per resource type it cannot create
#    (docs/local-cloud.md, "How it is built", lists what the local cloud does not emulate).
#    moto's Step Functions interpreter logs an ERROR with a multi-kilobyte repr of the state for
#    every task error, including the ones a Retry or Catch handles (a FenceBusy retry loop fills
#    the live log); GetExecutionHistory has the same facts, so that one logger is silenced.
def _skip_notice(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("No Moto CloudFormation support")


def _quiet_skipped_resources() -> None:
    logging.getLogger("moto").addFilter(_skip_notice)
    logging.getLogger("moto.stepfunctions.parser.asl.component.eval_component").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)


# 7. StartExecution without a name: Step Functions names the execution with a UUID; moto's
#    executing (parser) backend keeps the name None, so the second unnamed execution of a state
#    machine fails with ExecutionAlreadyExists.
def _patch_execution_names() -> None:
    backend_cls = sfn_parser_models.StepFunctionsParserBackend
    original = backend_cls.start_execution
    _originals["start_execution"] = original

    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    backend_cls.start_execution = start_execution  # type: ignore[method-assign]


# 8. moto's server runs requests on concurrent threads with no lock around a DynamoDB operation, so
#    two conditional writes of the same item can both pass their condition (check and write are
#    separate steps), and two StartExecution calls with the same name can both create an execution.
#    DynamoDB's single-item atomicity and Step Functions' execution-name uniqueness are what this
#    project's idempotency, dedup and fences rely on, so those requests are serialized. (SQS is
#    left concurrent: long polls must not block, and a message seen twice is what SQS may do.)
SERIALIZED_TARGETS = ("DynamoDB_20120810.", "AWSStepFunctions.StartExecution")


class SerializeAtomicRequests:
    """WSGI wrapper around moto's app: one DynamoDB / StartExecution request at a time."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if not target.startswith(SERIALIZED_TARGETS):
            return self._app(environ, start_response)
        with self._lock:
            # moto builds the whole response inside this call; materialize it under the lock.
            return list(self._app(environ, start_response))


def install(runtime: LambdaRuntime) -> None:
    """Apply the patches and route every Lambda invocation in this process to `runtime`."""
    global _runtime  # noqa: PLW0603 - moto's backends are process-global; so is this switch
    with _lock:
        _runtime = runtime
        if _originals:
            return
        function_cls = lambda_models.LambdaFunction
        _originals["_invoke_lambda"] = function_cls._invoke_lambda
        _originals["invoke"] = function_cls.invoke
        _originals["queue_mappings"] = sqs_models.Queue.__dict__.get("lambda_event_source_mappings")
        function_cls._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
        function_cls.invoke = _invoke  # type: ignore[method-assign]
        sqs_models.Queue.lambda_event_source_mappings = property(_no_mappings, _drop_mapping)  # type: ignore[assignment]
        _patch_stepfunctions()
        _quiet_skipped_resources()
        _patch_execution_names()
        _patch_public_parameters()
        patches_cfn.apply(_originals)
        patches_dynamo.apply(_originals)
        patches_speed.apply(_originals)
        patches_express.apply(_originals)  # last: it wraps patch 7's StartExecution


def uninstall() -> None:
    """Restore moto (tests use this; a running local cloud keeps its patches until exit)."""
    global _runtime  # noqa: PLW0603
    with _lock:
        _runtime = None
        if not _originals:
            return
        patches_express.restore(_originals)
        function_cls = lambda_models.LambdaFunction
        function_cls._invoke_lambda = _originals.pop("_invoke_lambda")  # type: ignore[method-assign]
        function_cls.invoke = _originals.pop("invoke")  # type: ignore[method-assign]
        original_mappings = _originals.pop("queue_mappings")
        if original_mappings is None:
            del sqs_models.Queue.lambda_event_source_mappings  # type: ignore[misc]
        else:  # pragma: no cover - moto 5.2.5 sets it per instance
            sqs_models.Queue.lambda_event_source_mappings = original_mappings
        sfn_models.stepfunctions_backends = _originals.pop("sfn_backends")
        sfn_parser_models.StepFunctionsParserBackend.start_execution = _originals.pop("start_execution")  # type: ignore[method-assign]
        patches_cfn.restore(_originals)
        ssm_models.SimpleSystemManagerBackend.get_parameter = _originals.pop("get_parameter")  # type: ignore[method-assign]
        _public_layer.clear()
        patches_dynamo.restore(_originals)
        patches_speed.restore(_originals)
        _originals.clear()


def deployed_functions(*, region: str, account_id: str) -> list[FunctionSpec]:
    """The $LATEST specs of every function in moto's Lambda backend (for prewarming)."""
    return [_spec(fn) for fn in lambda_models.lambda_backends[account_id][region].list_functions()]


def reset_moto() -> None:
    """Forget every resource, as a fresh moto server would (the next local cloud starts empty).

    moto's reset covers every BackendDict, the Step Functions parser backends included.
    """
    from moto.moto_api._internal.models import moto_api_backend  # noqa: PLC0415

    moto_api_backend.reset()


def installed() -> bool:
    return bool(_originals)


def current_runtime() -> LambdaRuntime | None:
    return _runtime
