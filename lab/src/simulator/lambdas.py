"""Running function code: moto's Lambda invocations go to the real handlers, in this process.

`installed()` patches moto's single code-running point, `LambdaFunction._invoke_lambda`, to import
the function's handler (`module.function` under `functions/`) and call it with the Lambda context
the local cloud's workers also build (`emulator.lambda_runtime`) and a per-function runtime, the
service's own (`Service.runtime`), built from that function's own environment. A handler exception
comes back with `errorType` = its class name, as on AWS, so Retry/Catch match; a `SimulatedCrash`
(a raise-mode crash point) comes back as `Runtime.ExitError`, what Lambda reports for a sandbox
that died, so the state machine retries it as it would on AWS.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import types
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self
from unittest import mock

from moto.awslambda.models import LambdaFunction
from moto.dynamodb.responses import DynamoHandler
from moto.sqs.responses import SQSResponse

from emulator.functions import lambda_environment
from emulator.lambda_runtime import LambdaContext, load_handler
from emulator.shapes import EXIT_ERROR, error_payload
from ops.service import composition_root, service
from reliability.runtime import Runtime
from reliability.settings import FunctionSettings, settings_of
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from simulator.clock import Clock, clocked_datetime_module
from simulator.concurrent import switch_point
from simulator.events import ACCOUNT, REGION
from simulator.executions import ExecutionQueue
from simulator.observe import Caller, Observer, Snapshot, current_caller, observed, set_caller
from simulator.operators import StopDuring
from simulator.patches import express_workflows, on_the_clock

if TYPE_CHECKING:
    from emulator.functions import FunctionSpec

# Where Powertools (3.x) reads the time for idempotency: `dt.datetime.now()` in each of these
# modules (in-progress expiry, record expiry, the conditional put, the inconsistency check).
_POWERTOOLS_TIME_MODULES = (
    "aws_lambda_powertools.utilities.idempotency.base",
    "aws_lambda_powertools.utilities.idempotency.persistence.base",
    "aws_lambda_powertools.utilities.idempotency.persistence.dynamodb",
    "aws_lambda_powertools.utilities.idempotency.persistence.datarecord",
)
# moto's Step Functions interpreter sleeps a Retry's wait with this module's `time.sleep`.
_SFN_RETRIER = "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl"
# botocore sleeps its retries' backoff with this module's `time.sleep`.
_SDK_RETRIES = "botocore.endpoint"


@dataclass
class Invocation:
    function: str
    event: Any
    result: Any
    error_type: str | None
    traceback: str | None = None  # a crash's shows the SimulatedCrash and its point


class LambdaError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


REQUEST_LOCK = threading.RLock()


@contextmanager
def _atomic_requests(handler_class: type, observers: list[Observer] | None = None) -> Iterator[None]:
    original = handler_class.call_action  # type: ignore[attr-defined]
    snapshot = Snapshot(ACCOUNT, REGION) if observers is not None else None

    def call_action(self: Any) -> Any:
        switch_point()  # two copies of one run interleave between requests (simulator.concurrent)
        with REQUEST_LOCK:
            if snapshot is None or not observers:
                return original(self)
            return observed(snapshot, self._get_action(), self.body, lambda: original(self), observers)

    with mock.patch.object(handler_class, "call_action", call_action):
        yield


class HandlerRunner:
    """What `InProcessCloud` does to run its functions' handlers (a mixin: the cloud holds the state)."""

    clock: Clock
    crash_plan: CrashPlan | None
    functions: dict[str, FunctionSpec]
    outputs: dict[str, str]
    invocations: list[Invocation]
    stops: list[StopDuring]
    queued_executions: ExecutionQueue
    write_observers: list[Observer]
    _runtimes: dict[str, Runtime[FunctionSettings]]
    _lock: threading.Lock

    if TYPE_CHECKING:

        def client(self, service: str) -> Any: ...

        def function_client(self, service: str) -> Any: ...

        @property
        def sfn(self) -> Any: ...

    @contextmanager
    def installed(self) -> Iterator[Self]:
        """Route moto's Lambda invocations to the real handlers in this process, make each
        DynamoDB and SQS request atomic with respect to the others, queue the Step Functions
        executions moto starts (`simulator.executions`: they run one at a time where a caller
        waits), and put Powertools' idempotency time and the Step Functions Retry waits on
        `self.clock`.

        Handlers still run on several threads (`chaos.interleave`'s attempts, each execution's
        own evaluation thread); moto's backends are not thread-safe (TransactWriteItems
        deep-copies a table that another thread's PutItem may be changing: "dictionary changed
        size during iteration"). AWS applies each request atomically, so one lock per request
        keeps the interleavings between requests, which is what races are made of, and removes
        only the emulator's own data races.
        """
        cloud = self

        def invoke(function: LambdaFunction, event: Any = None) -> tuple[str, bool, str]:
            return cloud._invoke(function.function_name, event)

        clocked = clocked_datetime_module(self.clock)
        with ExitStack() as stack:
            stack.enter_context(mock.patch.object(LambdaFunction, "_invoke_lambda", invoke))
            stack.enter_context(_atomic_requests(DynamoHandler, self.write_observers))
            stack.enter_context(_atomic_requests(SQSResponse))
            stack.enter_context(on_the_clock(self.clock))
            stack.enter_context(express_workflows(self.clock))
            stack.enter_context(self.queued_executions.installed())
            for module in _POWERTOOLS_TIME_MODULES:
                stack.enter_context(mock.patch(f"{module}.dt", clocked))
            # Both retry loops wait on the clock instead of sleeping: a resend's backoff costs the
            # caller simulated time (its lease), no real time.
            waits = types.SimpleNamespace(sleep=self.clock.advance)
            stack.enter_context(mock.patch(f"{_SFN_RETRIER}.time", waits))
            stack.enter_context(mock.patch(f"{_SDK_RETRIES}.time", waits))
            yield self

    def environment(self, function_name: str) -> dict[str, str]:
        """What the function's code would find in its environment on Lambda."""
        return lambda_environment(self.functions[function_name], log_stream=f"simulator/{function_name}")

    def runtime_for(self, function_name: str) -> Runtime[FunctionSettings]:
        with self._lock:
            runtime = self._runtimes.get(function_name)
            if runtime is None:
                spec = self.functions[function_name]
                settings = settings_of(spec.handler).from_env(self.environment(function_name))
                runtime = self._runtimes[function_name] = self.new_runtime(function_name, settings)
            return runtime

    def new_runtime(
        self,
        function_name: str,  # noqa: ARG002 - for overrides
        settings: FunctionSettings,
    ) -> Runtime[FunctionSettings]:
        """A function's runtime, built once: the service's own (`Service.runtime`). A hook: the
        chaos cloud gives each function its own crash plan, clients and runtime class."""
        runtime: type[Runtime[FunctionSettings]] = composition_root(service()).Runtime
        return runtime(
            settings, client_factory=self.function_client, crash_plan=self.crash_plan, clock=self.clock
        )

    def call(self, function_name: str, event: Any) -> Any:
        """Run a function's handler directly (no Lambda API); exceptions propagate."""
        spec = self.functions[function_name]
        handler = load_handler(spec.handler)
        deadline_ms = int((time.time() + spec.timeout) * 1000)
        context = LambdaContext.from_environ(
            str(uuid.uuid4()), deadline_ms, spec.arn, self.environment(function_name)
        )
        outer = current_caller()
        set_caller(Caller(function_name, context.aws_request_id))
        try:
            self._stop(function_name, "before", event)
            with composition_root(service()).RUNTIMES.scoped(self.runtime_for(function_name)):
                result = handler(event, context)
            self._stop(function_name, "after", event)
            return result
        finally:
            set_caller(outer)

    def _stop(self, function_name: str, when: str, event: Any) -> None:
        with self._lock:
            armed = next((s for s in self.stops if (s.function, s.when) == (function_name, when)), None)
            if armed is not None:
                self.stops.remove(armed)
        if armed is not None:
            self.stop_execution(armed, event)

    def stop_execution(self, stop: StopDuring, event: Any) -> None:
        """An armed operator's StopExecution of the execution this invocation belongs to."""
        stop.fire(self.sfn, self.outputs["StateMachineArn"], event)

    def _invoke(self, function_name: str, event: Any) -> tuple[str, bool, str]:
        if isinstance(event, str):
            event = json.loads(event or "{}")
        try:
            result = self.call(function_name, event)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt | SystemExit):
                raise
            error_type = self.error_type(function_name, event, error)
            # A dead sandbox: Lambda reports the runtime's exit, never the process's last
            # exception (the message names the crash point, for whoever reads the history).
            crashed = isinstance(error, SimulatedCrash)
            message = f"Runtime exited with error: SimulatedCrash: {error}" if crashed else str(error)
            self.invocations.append(
                Invocation(function_name, event, None, error_type, traceback.format_exc())
            )
            return error_payload(error_type, message), True, ""
        self.invocations.append(Invocation(function_name, event, result, None))
        return json.dumps(result), False, ""

    def error_type(self, function_name: str, event: Any, error: BaseException) -> str:  # noqa: ARG002 - for overrides
        """The errorType Lambda reports for an invocation that raised `error` (a hook: the chaos
        cloud counts crashes and turns some into timeouts)."""
        return EXIT_ERROR if isinstance(error, SimulatedCrash) else type(error).__name__
