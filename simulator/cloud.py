"""The whole chain in-process on moto, deployed from the synthesized cloud assembly.

`InProcessCloud(assembly_dir).deploy()` (inside an active `mock_aws` with Step Functions execution
on) creates what the templates say: the data stack's tables and queues (with their redrive
policies), the app stack's functions (moto Lambda functions with each function's environment,
resolved) and the state machine whose definition is the template's, with the function ARNs
resolved. Function code is the REAL handler code, run in this process: `install()` patches
moto's single code-running point, `LambdaFunction._invoke_lambda`, to import the function's
handler (`module.function` under `functions/`) and call it with a Lambda-like context and a
per-function `orders.runtime.Runtime` built from that function's own environment. A handler
exception comes back with `errorType` = its class name, as on AWS, so Retry/Catch match; a
`SimulatedCrash` (a raise-mode crash point) comes back as `Runtime.ExitError`, what Lambda reports
for a sandbox that died, so the state machine retries it as it would on AWS.

SQS has no poller here: `pump()` receives, invokes the consumer, deletes only what succeeded
(`batchItemFailures` stay, visible again at once), like the Lambda event source mapping; when the
consumer's invocation dies the whole batch stays (visible again after the queue's visibility
timeout, which the clock skips) and is reported failed.

Time: one `Clock` (wall time plus an offset a test moves forward) drives what the handlers read
(fence leases, TTLs, dates), Powertools' idempotency time (in-progress and record expiry) and the
Step Functions Retry waits (moto would sleep them; here they move the clock instead, so a retry
that waits out a dead attempt's lease costs no real time). `cloud.advance(seconds)` moves it and
applies what AWS does as time passes (DynamoDB TTL deletion, `simulator.expiry`; SQS retention,
`simulator.queues`); SQS and the Step Functions dates run on the same clock (`simulator.patches`).

Operators and the platform act through primitives: `rerun`, `redrive`, `redrive_dlq`,
`stop_during` (`simulator.operators`), `throttled_poll` (the event source mapping meeting a
throttled function, `simulator.queues`).

The fault-injection work builds on this: pass a `CrashPlan`, move `clock` forward past a lease,
redeliver a message, run `ops.invariants.check(cloud.stores())`.
"""

from __future__ import annotations

import importlib
import io
import json
import threading
import time
import traceback
import types
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from moto.awslambda.models import LambdaFunction
from moto.dynamodb.responses import DynamoHandler
from moto.sqs.responses import SQSResponse

from localcloud.shapes import EXIT_ERROR, error_payload
from ops.invariants import Stores, peek_dead_letters
from ops.redrive import DlqRedrive, WorkflowRedrive
from orders import runtime as orders_runtime
from orders.config import Settings
from orders.domain import Order
from reliability.crashpoints import CrashPlan, SimulatedCrash
from simulator.clock import Clock, clocked_datetime_module
from simulator.events import ACCOUNT, EVENTS_DIR, REGION, rest_event, sqs_record
from simulator.expiry import delete_expired, ttl_tables
from simulator.observe import Caller, Observer, Snapshot, current_caller, observed, set_caller
from simulator.operators import StopDuring, redrive, redrive_queue, rerun
from simulator.patches import EXECUTION_ENDED, on_the_clock
from simulator.queues import ThrottledPoll, expire_messages
from simulator.rules import ScheduledRule, due, scheduled_event, scheduled_rules
from simulator.templates import exports_of, function_specs, queue_consumers, state_machine_definition
from simulator.world import deployed

__all__ = [
    "ACCOUNT",
    "EVENTS_DIR",
    "EXIT_ERROR",
    "REGION",
    "ApiResponse",
    "Clock",
    "InProcessCloud",
    "Invocation",
    "LambdaError",
    "PumpResult",
    "rest_event",
    "running_cloud",
    "sqs_record",
]
_TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}
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
_PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "stack",
    "AWS::NoValue": None,
}


@dataclass
class FakeLambdaContext:
    """What Powertools and our handlers read from the Lambda context."""

    function_name: str
    timeout_seconds: int
    memory_limit_in_mb: int = 256
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.monotonic()) * 1000), 0)


@dataclass
class FunctionSpec:
    name: str
    handler: str
    timeout: int
    environment: dict[str, str]


@dataclass
class Invocation:
    function: str
    event: Any
    result: Any
    error_type: str | None
    traceback: str | None = None  # a crash's shows the SimulatedCrash and its point


class _Resolver:
    """Resolves the CloudFormation intrinsics CDK emits, against what was deployed."""

    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}
        self.attrs: dict[tuple[str, str], Any] = {}
        self.exports: dict[str, Any] = {}

    def __call__(self, value: Any) -> Any:  # noqa: PLR0911 - one return per intrinsic
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (name, arg), *_ = value.items()
            if name == "Ref":
                # Resources the in-process cloud does not deploy (the REST API, alarms) resolve
                # to a readable placeholder.
                return _PSEUDO[arg] if arg in _PSEUDO else self.refs.get(arg, f"<{arg}>")
            if name == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attrs[(logical, attribute)]
            if name == "Fn::ImportValue":
                return self.exports[self(arg)]
            if name == "Fn::Join":
                separator, parts = arg
                return separator.join(str(self(p)) for p in parts)
            if name == "Fn::Select":
                index, items = arg
                return self(items)[int(index)]
        return {k: self(v) for k, v in value.items()}


def _template(assembly: Path, suffix: str) -> dict[str, Any]:
    matches = sorted(assembly.glob(f"*-{suffix}.template.json"))
    if len(matches) != 1:
        raise FileNotFoundError(f"expected one *-{suffix}.template.json in {assembly}, found {matches}")
    return json.loads(matches[0].read_text())


def _resources(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


_REQUEST_LOCK = threading.RLock()


@contextmanager
def _atomic_requests(handler_class: type, observers: list[Observer] | None = None) -> Iterator[None]:
    original = handler_class.call_action  # type: ignore[attr-defined]
    snapshot = Snapshot(ACCOUNT, REGION) if observers is not None else None

    def call_action(self: Any) -> Any:
        with _REQUEST_LOCK:
            if snapshot is None or not observers:
                return original(self)
            return observed(snapshot, self._get_action(), self.body, lambda: original(self), observers)

    with mock.patch.object(handler_class, "call_action", call_action):
        yield


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


class InProcessCloud:
    def __init__(
        self,
        assembly: Path,
        *,
        crash_plan: CrashPlan | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.assembly = assembly
        self.data_template = _template(assembly, "data")
        self.app_template = _template(assembly, "app")
        self.crash_plan = crash_plan
        self.clock = clock or Clock()
        self.resolve = _Resolver()
        self.queue_urls: dict[str, str] = {}  # by queue name
        self.outputs: dict[str, str] = {}
        self.functions: dict[str, FunctionSpec] = {}  # by physical name
        self.invocations: list[Invocation] = []
        self._runtimes: dict[str, orders_runtime.Runtime] = {}
        self._lock = threading.Lock()
        self.write_observers: list[Observer] = []  # told every DynamoDB write (simulator.observe)
        self.ttl_tables = ttl_tables(self.data_template)
        self.expired_items = 0  # deleted by TTL so far
        self.expired_messages = 0  # dropped by queue retention so far
        self.stops: list[StopDuring] = []  # armed StopExecutions (stop_during)
        self.rules: list[ScheduledRule] = []  # EventBridge schedules (simulator.rules)

    # --- clients --------------------------------------------------------------------------------
    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION)

    @property
    def sfn(self) -> Any:
        return self.client("stepfunctions")

    @property
    def sqs(self) -> Any:
        return self.client("sqs")

    @property
    def dynamodb(self) -> Any:
        return self.client("dynamodb")

    def stores(self) -> Stores:
        return Stores.from_outputs(self.outputs, self.client)

    # --- simulated time -------------------------------------------------------------------------
    def advance(self, seconds: float, *, pollers_off: bool = False) -> int:
        """Move simulated time forward and apply what AWS does meanwhile: DynamoDB deletes every
        item whose TTL (the table's TimeToLiveSpecification attribute) is now at or past, and
        queues drop the messages older than their MessageRetentionPeriod (DLQs and unpolled
        queues always; a queue an event source mapping polls only with `pollers_off`, see
        `simulator.queues`); then each EventBridge schedule with a tick in the jump invokes its
        functions once (`simulator.rules`).
        Returns how many items expired (`expired_messages` counts the messages)."""
        self.clock.advance(seconds)
        expired = self.expire(pollers_off=pollers_off)
        self.fire_schedules()
        return expired

    def fire_schedules(self) -> None:
        """Invoke the targets of every schedule whose tick has come (what `advance` does)."""
        lam = self.client("lambda")
        for rule in due(self.rules, self.clock()):
            event = scheduled_event(rule, self.clock(), region=REGION, account=ACCOUNT)
            for function in rule.functions:
                lam.invoke(FunctionName=function, Payload=json.dumps(event).encode())

    def expire(self, *, pollers_off: bool = False) -> int:
        """Apply TTL deletion and queue retention at the clock's current time (what `advance` does)."""
        now = self.clock()
        deleted = sum(delete_expired(self.dynamodb, table, now) for table in self.ttl_tables)
        self.expired_items += deleted
        polled = frozenset() if pollers_off else self.polled_queues()
        with _REQUEST_LOCK:
            self.expired_messages += expire_messages(ACCOUNT, REGION, now, polled=polled)
        return deleted

    def polled_queues(self) -> frozenset[str]:
        """The names of the queues an event source mapping polls (from the app template)."""
        consumers = queue_consumers(self.data_template, self.app_template)
        return frozenset(self.outputs[output].rsplit("/", 1)[-1] for output in consumers)

    # --- deploy ---------------------------------------------------------------------------------
    def deploy(self) -> InProcessCloud:
        self._deploy_data()
        self._deploy_app()
        return self

    def _deploy_data(self) -> None:
        ddb, sqs, r = self.dynamodb, self.sqs, self.resolve
        for logical, resource in _resources(self.data_template, "AWS::DynamoDB::Table").items():
            p = resource["Properties"]
            ddb.create_table(
                TableName=p["TableName"],
                KeySchema=p["KeySchema"],
                AttributeDefinitions=p["AttributeDefinitions"],
                BillingMode="PAY_PER_REQUEST",
            )
            r.refs[logical] = p["TableName"]
            r.attrs[(logical, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{p['TableName']}"
        queues = _resources(self.data_template, "AWS::SQS::Queue")
        # Dead-letter queues first: the others' redrive policies point at them.
        for logical, resource in sorted(
            queues.items(), key=lambda kv: "RedrivePolicy" in kv[1]["Properties"]
        ):
            p = resource["Properties"]
            attributes = {k: str(p[k]) for k in ("VisibilityTimeout", "MessageRetentionPeriod") if k in p}
            if "RedrivePolicy" in p:
                attributes["RedrivePolicy"] = json.dumps(r(p["RedrivePolicy"]))
            url = sqs.create_queue(QueueName=p["QueueName"], Attributes=attributes)["QueueUrl"]
            r.refs[logical] = url
            self.queue_urls[p["QueueName"]] = url
            r.attrs[(logical, "Arn")] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{p['QueueName']}"
            r.attrs[(logical, "QueueName")] = p["QueueName"]
        self._outputs(self.data_template)

    def _outputs(self, template: Mapping[str, Any]) -> None:
        for key, output in template.get("Outputs", {}).items():
            value = self.resolve(output["Value"])
            if "Export" in output:
                self.resolve.exports[self.resolve(output["Export"]["Name"])] = value
            else:
                self.outputs[key] = value

    def _deploy_app(self) -> None:
        """Functions with their template environment (simulator.templates.function_specs) and
        the state machine with the template's definition (state_machine_definition)."""
        r = self.resolve
        machines = _resources(self.app_template, "AWS::StepFunctions::StateMachine")
        machine_arns: dict[str, str] = {}
        for logical, resource in machines.items():
            name = resource["Properties"]["StateMachineName"]
            machine_arns[name] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
            r.refs[logical] = machine_arns[name]
        for logical, resource in _resources(self.app_template, "AWS::Lambda::Function").items():
            name = resource["Properties"]["FunctionName"]
            r.refs[logical] = name
            r.attrs[(logical, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        exports = exports_of(self.data_template, queue_url=self.queue_urls.__getitem__)
        specs = function_specs(
            self.app_template, exports=exports, names=machine_arns, queue_url=self.queue_urls.__getitem__
        )
        role = self.client("iam").create_role(RoleName="in-process", AssumeRolePolicyDocument="{}")["Role"][
            "Arn"
        ]
        lam = self.client("lambda")
        code = _dummy_zip()
        for spec in specs:
            environment = {k: str(v) for k, v in spec["Environment"].items()}
            unresolved = [k for k, v in spec["Environment"].items() if not isinstance(v, str | int)]
            if unresolved:
                raise ValueError(f"{spec['FunctionName']}: unresolved environment {unresolved}")
            self.functions[spec["FunctionName"]] = FunctionSpec(
                name=spec["FunctionName"],
                handler=spec["Handler"],
                timeout=int(spec.get("Timeout") or 3),
                environment=environment,
            )
            lam.create_function(
                FunctionName=spec["FunctionName"],
                Runtime="python3.12",
                Role=role,
                Handler=spec["Handler"],
                Code={"ZipFile": code},
                Timeout=int(spec.get("Timeout") or 3),
                Environment={"Variables": environment},
            )
        function_arns = {
            name: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}" for name in self.functions
        }
        for resource in machines.values():
            p = resource["Properties"]
            self.sfn.create_state_machine(
                name=p["StateMachineName"],
                definition=json.dumps(state_machine_definition(self.app_template, function_arns)),
                roleArn=role,
                type=p.get("StateMachineType", "STANDARD"),
            )
        self._outputs(self.app_template)
        self.rules = scheduled_rules(self.app_template, self.resolve.refs.__getitem__, self.clock())

    # --- running function code ------------------------------------------------------------------
    @contextmanager
    def installed(self) -> Iterator[InProcessCloud]:
        """Route moto's Lambda invocations to the real handlers in this process, make each
        DynamoDB and SQS request atomic with respect to the others, and put Powertools'
        idempotency time and the Step Functions Retry waits on `self.clock`.

        Handlers run concurrently on moto's Step Functions threads; moto's backends are not
        thread-safe (TransactWriteItems deep-copies a table that another thread's PutItem may
        be changing: "dictionary changed size during iteration"). AWS applies each request
        atomically, so one lock per request keeps the interleavings between requests, which is
        what races are made of, and removes only the emulator's own data races.
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
            for module in _POWERTOOLS_TIME_MODULES:
                stack.enter_context(mock.patch(f"{module}.dt", clocked))
            stack.enter_context(
                mock.patch(f"{_SFN_RETRIER}.time", types.SimpleNamespace(sleep=self.clock.advance))
            )
            yield self

    def runtime_for(self, function_name: str) -> orders_runtime.Runtime:
        with self._lock:
            runtime = self._runtimes.get(function_name)
            if runtime is None:
                spec = self.functions[function_name]
                runtime = orders_runtime.Runtime(
                    Settings.from_env({**spec.environment, "AWS_LAMBDA_FUNCTION_NAME": function_name}),
                    client_factory=self.client,
                    crash_plan=self.crash_plan,
                    clock=self.clock,
                )
                self._runtimes[function_name] = runtime
            return runtime

    def call(self, function_name: str, event: Any) -> Any:
        """Run a function's handler directly (no Lambda API); exceptions propagate."""
        spec = self.functions[function_name]
        module_name, _, attribute = spec.handler.rpartition(".")
        handler = getattr(importlib.import_module(module_name), attribute)
        context = FakeLambdaContext(function_name=function_name, timeout_seconds=spec.timeout)
        outer = current_caller()
        set_caller(Caller(function_name, context.aws_request_id))
        try:
            self._stop(function_name, "before", event)
            with orders_runtime.scoped(self.runtime_for(function_name)):
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
            armed.fire(self.sfn, self.outputs["StateMachineArn"], event)

    def _invoke(self, function_name: str, event: Any) -> tuple[str, bool, str]:
        if isinstance(event, str):
            event = json.loads(event or "{}")
        try:
            result = self.call(function_name, event)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt | SystemExit):
                raise
            if isinstance(error, SimulatedCrash):
                # The sandbox died: Lambda reports the runtime's exit, never the process's last
                # exception (the message names the crash point, for whoever reads the history).
                error_type, message = EXIT_ERROR, f"Runtime exited with error: SimulatedCrash: {error}"
            else:
                error_type, message = type(error).__name__, str(error)
            self.invocations.append(
                Invocation(function_name, event, None, error_type, traceback.format_exc())
            )
            return error_payload(error_type, message), True, ""
        self.invocations.append(Invocation(function_name, event, result, None))
        return json.dumps(result), False, ""

    # --- the outputs contract, by name ----------------------------------------------------------
    def function(self, output_prefix: str) -> str:
        """`Api` -> the api function's physical name (from the `<Name>FunctionName` output)."""
        return self.outputs[f"{output_prefix}FunctionName"]

    def invoke(self, output_prefix: str, event: Any) -> Any:
        """Invoke through the Lambda API (moto -> the patched runtime); returns the parsed payload."""
        response = self.client("lambda").invoke(
            FunctionName=self.function(output_prefix), Payload=json.dumps(event).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            raise LambdaError(payload.get("errorType", "Unknown"), payload.get("errorMessage", ""))
        return payload

    # --- API ------------------------------------------------------------------------------------
    def api(
        self, method: str, path: str, *, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> ApiResponse:
        """One REST proxy request through the api function."""
        event = rest_event(method, path, body=body, headers=headers)
        raw = self.invoke("Api", event)
        text = raw.get("body") or ""
        try:
            parsed = json.loads(text) if text else None
        except json.JSONDecodeError:
            parsed = text
        # REST (v1) proxy responses carry multiValueHeaders (Powertools) or headers.
        headers = {k: v[-1] for k, v in (raw.get("multiValueHeaders") or {}).items() if v}
        headers.update(raw.get("headers") or {})
        return ApiResponse(status=int(raw["statusCode"]), body=parsed, headers=headers)

    # --- SQS, driven by hand --------------------------------------------------------------------
    def send(self, queue_output: str, body: Any) -> str:
        text = body if isinstance(body, str) else json.dumps(body)
        return str(self.sqs.send_message(QueueUrl=self.outputs[queue_output], MessageBody=text)["MessageId"])

    def receive_batch(
        self, queue_output: str, *, batch_size: int = 10
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One receive as the event source mapping does it: the messages and their SQS event."""
        messages: list[dict[str, Any]] = self.sqs.receive_message(
            QueueUrl=self.outputs[queue_output],
            MaxNumberOfMessages=batch_size,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        queue_arn = self._queue_arn(queue_output)
        return messages, {"Records": [sqs_record(m, queue_arn=queue_arn) for m in messages]}

    def pump(self, queue_output: str, function_prefix: str, *, batch_size: int = 10) -> PumpResult:
        """Receive once, invoke the consumer with the batch, delete only the records that succeeded;
        failed ones are made visible again at once (the visibility timeout, fast-forwarded).

        When the consumer's invocation fails (a crash or an unhandled error), nothing is deleted:
        the whole batch is visible again, every record is reported failed with `error` set, and
        the clock moves by the queue's visibility timeout, the time SQS keeps a dead invocation's
        batch hidden (the claims the dead invocation left expire meanwhile, as on AWS)."""
        url = self.outputs[queue_output]
        messages, event = self.receive_batch(queue_output, batch_size=batch_size)
        if not messages:
            return PumpResult(received=0, failed=[])
        try:
            response = self.invoke(function_prefix, event)
        except LambdaError as error:
            for message in messages:
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            self.clock.advance(self._visibility_timeout(url))
            return PumpResult(
                received=len(messages),
                failed=sorted(m["MessageId"] for m in messages),
                error=error.error_type,
            )
        failed = {item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return PumpResult(received=len(messages), failed=sorted(failed))

    def drain(self, queue_output: str, function_prefix: str, *, max_rounds: int = 20) -> int:
        handled = 0
        for _ in range(max_rounds):
            result = self.pump(queue_output, function_prefix)
            if result.received == 0:
                return handled
            handled += result.received
        return handled

    def _visibility_timeout(self, url: str) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
        return int(attributes["Attributes"].get("VisibilityTimeout", 30))

    def _queue_arn(self, queue_output: str) -> str:
        name = self.outputs[queue_output].rsplit("/", 1)[-1]
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"

    def messages(self, queue_output: str) -> list[dict[str, Any]]:
        """Peek at a queue (e.g. a DLQ) without consuming it."""
        return [vars(d) for d in peek_dead_letters(self.sqs, self.outputs[queue_output], queue_output)]

    def throttled_poll(self, queue_output: str, *, batch_size: int = 10) -> ThrottledPoll:
        """One poll of the event source mapping whose function is throttled: the batch is received
        (ApproximateReceiveCount + 1) but never invoked, and comes back once the queue's
        visibility timeout has passed (the clock moves by it). Past maxReceiveCount, the next
        receive moves the messages to the DLQ."""
        messages, _ = self.receive_batch(queue_output, batch_size=batch_size)
        if messages:
            self.clock.advance(self._visibility_timeout(self.outputs[queue_output]))
        return ThrottledPoll(
            message_ids=tuple(m["MessageId"] for m in messages),
            receive_counts=tuple(int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages),
        )

    # --- operators (simulator.operators: the ops tools' own code) --------------------------------
    def rerun(self, order_id: str) -> Order:
        """Start run N+1 of a FAILED order (`ops.rerun`)."""
        return rerun(self.outputs, REGION, order_id)

    def redrive(self, execution_arn: str) -> WorkflowRedrive:
        """Redrive a failed execution (`ops.redrive`); refused with `ExecutionNotRedrivable` once it
        ended more than the redrive window ago."""
        return redrive(self.sfn, execution_arn)

    def redrive_dlq(self, dlq_output: str) -> DlqRedrive:
        """Move a DLQ back to its source queue (`ops.redrive`)."""
        return redrive_queue(self.sqs, self.outputs[dlq_output])

    def stop_during(self, function_prefix: str, *, when: str = "before") -> StopDuring:
        """Arm one StopExecution of the execution whose task next invokes the function (`ChargePayment`
        -> its physical name), while that invocation runs; `.stopped` names what it stopped."""
        stop = StopDuring(self.function(function_prefix), when)
        with self._lock:
            self.stops.append(stop)
        return stop

    # --- Step Functions -------------------------------------------------------------------------
    def executions(self) -> list[dict[str, Any]]:
        arn = self.outputs["StateMachineArn"]
        return [
            e
            for page in self.sfn.get_paginator("list_executions").paginate(stateMachineArn=arn)
            for e in page["executions"]
        ]

    def wait(self, execution_arn: str, *, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            with EXECUTION_ENDED:  # an end notified between the describe and the wait is not lost
                execution = self.sfn.describe_execution(executionArn=execution_arn)
                if execution["status"] in _TERMINAL:
                    return dict(execution)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{execution_arn} still {execution['status']} after {timeout}s")
                EXECUTION_ENDED.wait(0.05)

    def wait_all(self, *, timeout: float = 60) -> list[dict[str, Any]]:
        return [self.wait(e["executionArn"], timeout=timeout) for e in self.executions()]

    def settle(self, *, rounds: int = 5) -> None:
        """Drive everything to rest: orders queue -> executions -> consumer queues."""
        consumers = queue_consumers(self.data_template, self.app_template)
        for _ in range(rounds):
            moved = self.drain("OrdersQueueUrl", consumers["OrdersQueueUrl"])
            self.wait_all()
            for queue, function in consumers.items():
                if queue != "OrdersQueueUrl":  # the event consumers (orders.workflow.CONSUMERS)
                    moved += self.drain(queue, function)
            if moved == 0:
                return


class LambdaError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


@dataclass(frozen=True)
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass(frozen=True)
class PumpResult:
    received: int
    failed: list[str]
    error: str | None = None  # the errorType when the consumer's invocation died (all failed)


@contextmanager
def running_cloud(
    assembly: Path, *, crash_plan: CrashPlan | None = None, clock: Clock | None = None, seed: bool = True
) -> Iterator[InProcessCloud]:
    """moto with Step Functions execution on, the assembly deployed, handlers installed, the catalog
    seeded: the whole chain, in this process (a fresh moto world, or the reused one inside
    `simulator.world.reusing()`)."""
    from ops.seed import seed_inventory  # noqa: PLC0415

    def seed_catalog(cloud: InProcessCloud) -> None:
        if seed:
            seed_inventory(cloud.dynamodb, cloud.outputs["InventoryTableName"])

    cloud = InProcessCloud(assembly, crash_plan=crash_plan, clock=clock)
    with deployed(cloud, seed=seed_catalog), cloud.installed():
        yield cloud
