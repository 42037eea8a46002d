"""The whole chain in-process on moto, deployed from the synthesized cloud assembly.

`InProcessCloud(assembly_dir).deploy()` (inside an active `mock_aws` with Step Functions execution
on) creates what the templates say (`simulator.deploy`). Function code is the REAL handler code,
run in this process (`simulator.lambdas`: `installed()` routes moto's Lambda invocations to the
handlers). SQS has no poller: `pump()`/`drain()`/`settle()` play the event source mapping
(`simulator.consumers`). A started execution is queued and runs where a caller waits for
executions (`wait`, `wait_all`, `settle`), one at a time in start order (`simulator.executions`):
the same actions give the same outcome.

Time: one `Clock` (wall time plus an offset a test moves forward) drives what the handlers read
(fence leases, TTLs, dates), Powertools' idempotency time (in-progress and record expiry) and the
Step Functions Retry waits (moto would sleep them; here they move the clock instead, so a retry
that waits out a dead attempt's lease costs no real time). `cloud.advance(seconds)` moves it and
applies what AWS does as time passes (DynamoDB TTL deletion, `simulator.expiry`; SQS retention,
`simulator.queues`); SQS and the Step Functions dates run on the same clock (`simulator.patches`).

Operators and the platform act through primitives: `rerun`, `redrive`, `redrive_dlq`,
`stop_during` (`simulator.operators`), `throttled_poll` (the event source mapping meeting a
throttled function, `simulator.consumers`).

The fault-injection work builds on this: pass a `CrashPlan`, move `clock` forward past a lease,
redeliver a message, run `ops.invariants.check(cloud.stores())`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from moto.stepfunctions.parser.models import stepfunctions_parser_backends

from emulator.apigw_template import apis_from_template
from emulator.functions import FunctionSpec
from emulator.patches_express import express_executions
from emulator.shapes import EXIT_ERROR
from emulator.templates import queue_consumers, read_template, resources_of_type
from ops.invariants import Stores
from ops.redrive import DlqRedrive, WorkflowRedrive
from ops.service import service
from ops.stack_outputs import queue_output
from ops.target import CLIENT_CONFIG as OPERATOR_CLIENT_CONFIG
from reliability.run_store import RunRecord
from reliability.runtime import CLIENT_CONFIG, Runtime
from reliability.settings import FunctionSettings
from reliability.testing.crashpoints import CrashPlan
from simulator.clock import Clock
from simulator.consumers import EventSourceMapping, PumpResult
from simulator.deploy import Resolver, deploy
from simulator.events import ACCOUNT, EVENTS_DIR, REGION, rest_event, sqs_record
from simulator.executions import ExecutionQueue
from simulator.expiry import delete_expired, ttl_tables
from simulator.lambdas import REQUEST_LOCK, HandlerRunner, Invocation, LambdaError
from simulator.observe import Observer
from simulator.operators import StopDuring, redrive, redrive_queue, rerun
from simulator.queues import expire_messages
from simulator.rules import ASYNC_ATTEMPTS, ScheduledRule, due, scheduled_event
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


class InProcessCloud(HandlerRunner, EventSourceMapping):
    def __init__(
        self,
        assembly: Path,
        *,
        crash_plan: CrashPlan | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.assembly = assembly
        self.data_template = read_template(assembly, "data")
        self.app_template = read_template(assembly, "app")
        # The REST API's routes, as API Gateway picks them for a request (`api`, `rest_event`).
        self.api_routes = tuple(
            route
            for api in apis_from_template(self.app_template, physical_ids={}, function_names={})
            for route in api.routes
        )
        self.crash_plan = crash_plan
        self.clock = clock or Clock()
        self.resolve = Resolver()
        self.queue_urls: dict[str, str] = {}  # by queue name
        # every message a consumer was handed, by queue output and message id (its body): what the
        # app itself sent, for a harness that imitates it (chaos.foreign)
        self.delivered: dict[str, dict[str, str]] = {}
        self.outputs: dict[str, str] = {}
        self.functions: dict[str, FunctionSpec] = {}  # by physical name
        self.invocations: list[Invocation] = []
        self._runtimes: dict[str, Runtime[FunctionSettings]] = {}
        self._lock = threading.Lock()
        self.write_observers: list[Observer] = []  # told every DynamoDB write (simulator.observe)
        self.ttl_tables = ttl_tables(self.data_template)
        self.expired_items = 0  # deleted by TTL so far
        self.expired_messages = 0  # dropped by queue retention so far
        self.stops: list[StopDuring] = []  # armed StopExecutions (stop_during)
        self.rules: list[ScheduledRule] = []  # EventBridge schedules (simulator.rules)
        self.queued_executions = ExecutionQueue()  # run one at a time where callers wait (wait, settle)

    # --- clients --------------------------------------------------------------------------------
    def client(self, service: str) -> Any:
        """The harness's own client (the simulator's reads and writes, not a function's)."""
        return boto3.client(service, region_name=REGION)

    def function_client(self, service: str) -> Any:
        """A client as the functions build theirs (`reliability.runtime.CLIENT_CONFIG`: the SDK's
        standard retries, its timeouts), so a resend happens exactly as the SDK does it."""
        return boto3.client(service, region_name=REGION, config=CLIENT_CONFIG)

    def operator_client(self, tool: str, service: str) -> Any:  # noqa: ARG002 - for overrides
        """A client as the operator tools build theirs (`ops.target.CLIENT_CONFIG`); `tool` names
        the tool (`ops.rerun`, `ops.redrive`) for a subclass that instruments it."""
        return boto3.client(service, region_name=REGION, config=OPERATOR_CLIENT_CONFIG)

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
        return Stores.from_outputs(self.outputs, self.client, clock=self.clock)

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
                for _ in range(ASYNC_ATTEMPTS):  # Lambda retries an asynchronous invocation's error
                    response = lam.invoke(FunctionName=function, Payload=json.dumps(event).encode())
                    if "FunctionError" not in response:
                        break

    def expire(self, *, pollers_off: bool = False) -> int:
        """Apply TTL deletion and queue retention at the clock's current time (what `advance` does)."""
        now = self.clock()
        deleted = sum(delete_expired(self.dynamodb, table, now) for table in self.ttl_tables)
        self.expired_items += deleted
        polled = frozenset() if pollers_off else self.polled_queues()
        with REQUEST_LOCK:
            self.expired_messages += expire_messages(ACCOUNT, REGION, now, polled=polled)
        return deleted

    def polled_queues(self) -> frozenset[str]:
        """The names of the queues an event source mapping polls (from the app template)."""
        consumers = queue_consumers(self.data_template, self.app_template)
        return frozenset(self.outputs[output].rsplit("/", 1)[-1] for output in consumers)

    # --- deploy ---------------------------------------------------------------------------------
    def deploy(self) -> InProcessCloud:
        deploy(self)
        return self

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
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        caller: str | None = None,
    ) -> ApiResponse:
        """One REST proxy request through the api function (signed by `caller`'s IAM ARN, if any)."""
        event = rest_event(method, path, body=body, headers=headers, caller=caller, routes=self.api_routes)
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

    # --- operators (simulator.operators: the ops tools' own code) --------------------------------
    def rerun(self, entity_id: str) -> RunRecord:
        """Start run N+1 of a FAILED entity (`ops.rerun`); its record after the transition."""
        return rerun(self.outputs, REGION, entity_id, clients=lambda s: self.operator_client("ops.rerun", s))

    def redrive(self, execution_arn: str) -> WorkflowRedrive:
        """Redrive a failed execution (`ops.redrive`): resumed at its failed state within the redrive
        window; past it, restarted under the same token while its fences live, else REFUSED."""
        return redrive(self.operator_client("ops.redrive", "stepfunctions"), execution_arn, now=self.clock())

    def redrive_dlq(self, dlq_output: str) -> DlqRedrive:
        """Move a DLQ back to its source queue (`ops.redrive`)."""
        return redrive_queue(self.operator_client("ops.redrive", "sqs"), self.outputs[dlq_output])

    def stop_during(self, function_prefix: str, *, when: str = "before") -> StopDuring:
        """Arm one StopExecution of the execution whose task next invokes the function (`SubmitPayout`
        -> its physical name), while that invocation runs; `.stopped` names what it stopped."""
        stop = StopDuring(self.function(function_prefix), when)
        with self._lock:
            self.stops.append(stop)
        return stop

    # --- Step Functions -------------------------------------------------------------------------
    @property
    def express(self) -> bool:
        """Whether the state machine is Express (its template's StateMachineType)."""
        machines = resources_of_type(self.app_template, "AWS::StepFunctions::StateMachine").values()
        return any(m["Properties"].get("StateMachineType") == "EXPRESS" for m in machines)

    def executions(self) -> list[dict[str, Any]]:
        """Every execution of the state machine, as ListExecutions gives them; on Express, which
        no API lists (lab/src/emulator/patches_express.py, E3), as the cloud itself knows them."""
        arn = self.outputs["StateMachineArn"]
        if self.express:
            backend = stepfunctions_parser_backends[ACCOUNT][REGION]
            return [_listed(e) for e in express_executions(backend, arn)]
        return [
            e
            for page in self.sfn.get_paginator("list_executions").paginate(stateMachineArn=arn)
            for e in page["executions"]
        ]

    def described(self, execution_arn: str) -> dict[str, Any]:
        """An execution's name, input (JSON text), status, error and cause, as DescribeExecution gives
        them; on Express, which has no such API (E3), as the cloud itself knows them."""
        if not self.express:
            return dict(self.sfn.describe_execution(executionArn=execution_arn))
        execution = self._express_execution(execution_arn)
        return {
            "executionArn": execution.execution_arn,
            "name": execution.name,
            "input": execution.execution_input,
            "status": execution.status,
            "error": execution.error,
            "cause": execution.cause,
        }

    def kill_at_time_limit(self, token: str) -> str | None:
        """Express's time limit reached now by the running execution of this run token (the
        earliest started): the clock moves to its deadline, so the execution ends TIMED_OUT
        at its next state or retry while the invocation in flight runs on (AWS does not stop a
        Lambda invocation with its execution). Returns its ARN (None: none running, or no limit)."""
        running = [
            e
            for e in express_executions(
                stepfunctions_parser_backends[ACCOUNT][REGION], self.outputs["StateMachineArn"]
            )
            if e.status == "RUNNING" and e.input_data.get("token") == token
        ]
        for execution in running:
            deadline = getattr(getattr(execution.exec_worker, "env", None), "simulated_deadline", None)
            if deadline is not None:
                self.clock.advance(max(0.0, deadline - self.clock()))
                return str(execution.execution_arn)
        return None

    def stop_execution(self, stop: StopDuring, event: Any) -> None:
        """`stop_during`'s StopExecution; Express has none (E3): there the execution is killed at
        its time limit instead, the invocation running on."""
        if not self.express:
            super().stop_execution(stop, event)
            return
        token = event.get("token") if isinstance(event, dict) else None
        arn = self.kill_at_time_limit(token) if token is not None else None
        if arn is not None:
            stop.stopped.append(arn)

    def _express_execution(self, execution_arn: str) -> Any:
        backend = stepfunctions_parser_backends[ACCOUNT][REGION]
        arn = self.outputs["StateMachineArn"]
        return next(e for e in express_executions(backend, arn) if e.execution_arn == execution_arn)

    def wait(self, execution_arn: str) -> dict[str, Any]:
        """The execution once it has ended (the queued executions run first, in start order)."""
        self.queued_executions.run()
        if self.express:
            return _ended(next(e for e in self.executions() if e["executionArn"] == execution_arn))
        return _ended(self.sfn.describe_execution(executionArn=execution_arn))

    def wait_all(self) -> list[dict[str, Any]]:
        """Every execution once it has ended, as the listing gives it (status, dates, names)."""
        self.queued_executions.run()
        return [_ended(e) for e in self.executions()]

    def settle(self, *, rounds: int = 5) -> None:
        """Drive everything to rest: the worker's queue -> executions -> consumer queues."""
        consumers = queue_consumers(self.data_template, self.app_template)
        worker_queue = queue_output(service().queue)
        for _ in range(rounds):
            moved = self.drain(worker_queue, consumers[worker_queue])
            self.wait_all()
            for queue, function in consumers.items():
                if queue != worker_queue:  # the event consumers (the declaration's)
                    moved += self.drain(queue, function)
            if moved == 0:
                return


def _listed(execution: Any) -> dict[str, Any]:
    """A moto execution as ListExecutions lists one."""
    listed = {
        "executionArn": execution.execution_arn,
        "name": execution.name,
        "status": execution.status,
        "startDate": execution.start_date,
    }
    return listed | ({"stopDate": execution.stop_date} if execution.stop_date else {})


def _ended(execution: Mapping[str, Any]) -> dict[str, Any]:
    """An execution that has ended: with none queued, one still running is one nobody can end."""
    if execution["status"] not in _TERMINAL:
        arn, status = execution["executionArn"], execution["status"]
        raise RuntimeError(f"{arn} is still {status} with no execution queued")
    return dict(execution)


@dataclass(frozen=True)
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@contextmanager
def running_cloud(
    assembly: Path, *, crash_plan: CrashPlan | None = None, clock: Clock | None = None, seed: bool = True
) -> Iterator[InProcessCloud]:
    """moto with Step Functions execution on, the assembly deployed, handlers installed, the catalog
    seeded: the whole chain, in this process (a fresh moto world, or the reused one inside
    `simulator.world.reusing()`)."""
    from ops.seed import seed_service  # noqa: PLC0415

    def seed_catalog(cloud: InProcessCloud) -> None:
        if seed:
            seed_service(cloud.dynamodb, cloud.outputs)

    cloud = InProcessCloud(assembly, crash_plan=crash_plan, clock=clock)
    with deployed(cloud, seed=seed_catalog), cloud.installed():
        yield cloud
