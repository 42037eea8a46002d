"""`ChaosCloud`: the integration harness's in-process cloud, plus what fault schedules need.

Built on `simulator.cloud.InProcessCloud` (the whole chain on moto, deployed from the
synthesized assembly, real handler code). Added here, without touching the harness:

- every function's runtime gets a `chaos.points.FunctionPlan` from one `CrashController`, and
  its class is injectable (`chaos.control.unfenced_runtime` for the control run);
- every invocation is counted for the report (crashes, which the harness returns as
  `Runtime.ExitError`, and the step retries they cause); the harness's `Clock` already drives
  Powertools' idempotency time and the Step Functions Retry waits;
- SQS delivery like the event source mapping, with faults: a crashed batch returns to the queue
  after its visibility timeout (the clock jumps by it), duplicate deliveries of the same records,
  the redrive policy moving a message to the DLQ after maxReceiveCount receives;
- an HTTP client that retries with the same Idempotency-Key and records every response;
- `recover()`: drive everything to rest, redriving failed executions as an operator would.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from unittest import mock

import boto3
from botocore.config import Config

from chaos.audit import FenceAudit
from chaos.mutants import Mutant, instrument
from chaos.points import CrashController
from ops.redrive import redrive_dlq, redrive_failed_executions
from orders import runtime as orders_runtime
from orders.config import Settings
from orders.items import catalog_key, order_key
from reliability.crashpoints import SimulatedCrash
from simulator.cloud import (
    EXIT_ERROR,
    REGION,
    ApiResponse,
    Clock,
    InProcessCloud,
    Invocation,
    LambdaError,
    rest_event,
)
from simulator.templates import queue_consumers, workflow_tasks
from simulator.world import deployed

RuntimeFactory = Callable[..., orders_runtime.Runtime]
TIMED_OUT = "Sandbox.Timedout"
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}  # an EventBridge rate() expression's units
_SFN_LAMBDA = "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils"


class ClientPool:
    """boto3 clients, built once per process and reused by every fresh moto world.

    Building a client costs 50-80 ms (endpoint rules); the harness builds one per call and moto's
    Step Functions interpreter one per task, which dominated a schedule. moto intercepts at the
    botocore level, so a client outlives the `mock_aws` it was built in. A function's clients are
    instrumented again by each world's `FunctionPlan` (which replaces the previous hooks).
    """

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, owner: str, service: str, **kwargs: Any) -> Any:
        with self._lock:
            client = self._clients.get((owner, service))
            if client is None:
                client = boto3.client(service, region_name=REGION, **kwargs)
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


def contract_violations(exchanges: Iterable[Exchange], *, stage: str) -> list[str]:
    """Every answer the api function gave (2xx, 4xx, 409, 422, 503) is one the OpenAPI document
    lists for `POST /orders`, in its shape (`ops.fuzz.oracle`, the fuzz's oracle). A 502 from a
    function that died is API Gateway's, not the function's: not judged here."""
    from ops.fuzz.oracle import Answer, Tally  # noqa: PLC0415 - jsonschema only where judged
    from ops.fuzz.requests import Request  # noqa: PLC0415

    tally = Tally()
    for exchange in exchanges:
        if not exchange.headers:
            continue
        body = b"" if exchange.body is None else json.dumps(exchange.body).encode()
        request = Request("POST", f"/{stage}/orders", (("Idempotency-Key", exchange.key),), kind="chaos")
        _oracle(stage).check(request, Answer(exchange.status, exchange.headers, body), tally)
    return [f"contract: {line}" for line in tally.problems if not line.startswith("five_xx")]


@functools.cache
def _oracle(stage: str) -> Any:
    from ops.fuzz.oracle import Oracle  # noqa: PLC0415 - reads the OpenAPI document once

    return Oracle(stage)


def short_name(physical: str, environment: Mapping[str, str]) -> str:
    """`retrysafe-local-charge-payment` -> `charge-payment` (`{service}-{stage}-{name}`; the
    service's name may hold dashes itself)."""
    return physical.removeprefix(f"{environment['SERVICE_NAME']}-{environment['STAGE']}-")


@dataclass(frozen=True)
class Exchange:
    """One HTTP attempt as the client saw it."""

    key: str
    status: int  # 502 when the function died
    body: Any
    replayed: bool
    request: Any = None  # the request body sent (None: the one the key was first used with)
    headers: tuple[tuple[str, str], ...] = ()  # the function's answer's (none when it died)


@dataclass
class Recovery:
    """What it took to bring a schedule to rest (the report sums these)."""

    client_retries: int = 0
    crashed_invocations: int = 0
    redeliveries: int = 0
    duplicate_deliveries: int = 0
    step_retries: int = 0
    operator_redrives: int = 0
    dlq_redrives: int = 0
    lease_expiries: int = 0
    restarts: int = 0
    stops: int = 0
    stray_runs: int = 0

    def add(self, other: Recovery) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


class ChaosCloud(InProcessCloud):
    def __init__(
        self,
        assembly: Path,
        *,
        controller: CrashController | None = None,
        clock: Clock | None = None,
        runtime_factory: RuntimeFactory = orders_runtime.Runtime,
        mutant: Mutant | None = None,
    ) -> None:
        super().__init__(assembly, clock=clock)
        self.mutant = mutant
        if mutant is not None and mutant.template is not None:
            mutant.template(self.app_template)  # before deploy(): what synth would emit
        self.controller = controller or CrashController()
        self.runtime_factory = runtime_factory
        self.exchanges: list[Exchange] = []
        self.recovery = Recovery()
        self.fence_audit = FenceAudit(self.clock)
        self.write_observers.append(self.fence_audit)
        self._visibility: dict[str, int] = {}
        self._held = threading.Event()
        self._held.set()
        self._handler = threading.local()
        # The saga's step functions, as the synthesized state machine invokes them.
        self.step_functions = frozenset(workflow_tasks(self.app_template).values())
        # Each queue's consumer (URL output -> function prefix) and each DLQ's source queue.
        self.queue_consumers = queue_consumers(self.data_template, self.app_template)
        self.dlqs = {queue.replace("QueueUrl", "DlqUrl"): queue for queue in self.queue_consumers}

    def client(self, service: str) -> Any:
        return POOL.get("harness", service)

    # --- functions ------------------------------------------------------------------------------
    def runtime_for(self, function_name: str) -> orders_runtime.Runtime:
        with self._lock:
            runtime = self._runtimes.get(function_name)
            if runtime is None:
                spec = self.functions[function_name]
                factory = self.runtime_factory
                mutant = self.mutant
                if mutant is not None and mutant.runtime and mutant.applies(self._short(function_name)):
                    factory = mutant.runtime
                runtime = factory(
                    Settings.from_env({**spec.environment, "AWS_LAMBDA_FUNCTION_NAME": function_name}),
                    client_factory=self._clients_for(self._short(function_name)),
                    crash_plan=self.controller.plan_for(self._short(function_name)),
                    clock=self.clock,
                )
                self._runtimes[function_name] = runtime
            return runtime

    def _short(self, function_name: str) -> str:
        return short_name(function_name, self.functions[function_name].environment)

    def _clients_for(self, function: str) -> Callable[[str], Any]:
        """The function's clients, with this world's mutant (if any) on them."""
        return lambda service: instrument(POOL.get(function, service), function, self.mutant)

    def call(self, function_name: str, event: Any) -> Any:
        if function_name in self.step_functions:
            self._held.wait()
        self._handler.name = function_name
        try:
            return super().call(function_name, event)
        finally:
            self._handler.name = None

    def in_handler(self) -> str | None:
        """The function whose handler runs on this thread (None outside handler code)."""
        return getattr(self._handler, "name", None)

    @contextmanager
    def holding_steps(self) -> Iterator[None]:
        """Step functions wait while held (executions started meanwhile pause at their first task)."""
        self._held.clear()
        try:
            yield
        finally:
            self._held.set()

    def _invoke(self, function_name: str, event: Any) -> tuple[str, bool, str]:
        if isinstance(event, str):
            event = json.loads(event or "{}")
        try:
            result = self.call(function_name, event)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - a dead sandbox reports, it does not raise
            error_type = EXIT_ERROR if isinstance(error, SimulatedCrash) else type(error).__name__
            if isinstance(error, SimulatedCrash):
                self.recovery.crashed_invocations += 1
                if error.point in self.controller.stops:
                    self._stop_execution_of(event)
                if error.point in self.controller.timeouts:
                    # The invocation ran out of time: Lambda kills it at its timeout.
                    error_type = TIMED_OUT
                    self.clock.advance(self.functions[function_name].timeout)
            retried = error_type in (EXIT_ERROR, TIMED_OUT, "FenceBusy")
            if function_name in self.step_functions and retried:
                self.recovery.step_retries += 1
            self.invocations.append(Invocation(function_name, event, None, error_type))
            return json.dumps({"errorType": error_type, "errorMessage": str(error)}), True, ""
        self.invocations.append(Invocation(function_name, event, result, None))
        return json.dumps(result), False, ""

    def _stop_execution_of(self, event: Any) -> None:
        """An operator's StopExecution of the execution this step invocation belongs to."""
        token = event.get("token") if isinstance(event, dict) else None
        for execution in self.executions():
            if execution["status"] != "RUNNING":
                continue
            described = self.sfn.describe_execution(executionArn=execution["executionArn"])
            if token is not None and json.loads(described["input"]).get("token") == token:
                self.sfn.stop_execution(executionArn=execution["executionArn"], error="OperatorStop")
                self.recovery.stops += 1

    # --- the HTTP client ------------------------------------------------------------------------
    def post_order(self, key: str, body: Mapping[str, Any], *, max_attempts: int = 8) -> ApiResponse | None:
        """POST /orders as a well-behaved client: retry 5xx, 409 and a dead function with the same
        key (waiting out Retry-After / the in-progress window); None if it never got an answer."""
        api_timeout = self.functions[self.function("Api")].timeout
        for attempt in range(max_attempts):
            if attempt:
                self.recovery.client_retries += 1
            try:
                response = self.api("POST", "/orders", body=dict(body), headers={"Idempotency-Key": key})
            except LambdaError:
                self.exchanges.append(Exchange(key, 502, None, replayed=False, request=dict(body)))
                continue
            replayed = (response.header("Idempotent-Replayed") or "").lower() == "true"
            headers = tuple(response.headers.items())
            self.exchanges.append(
                Exchange(key, response.status, response.body, replayed, request=dict(body), headers=headers)
            )
            if response.status == 409 or response.status >= 500:
                self.clock.advance(api_timeout + 1)
                continue
            return response
        return None

    def http_violations(self) -> list[str]:
        """Every later 2xx answer for a key (a replay, or a re-execution after the first attempt's
        in-progress window passed) must equal the first."""
        first: dict[str, Exchange] = {}
        violations = []
        for exchange in self.exchanges:
            if exchange.status >= 300:
                continue
            answered = first.get(exchange.key)
            changed = answered is not None and exchange.request not in (None, answered.request)
            if changed and answered is not None and answered.request is not None:
                violations.append(
                    f"key {exchange.key}: a different body got {exchange.status} after the key was "
                    f"answered {answered.status} (a reused key with another payload must be 422)"
                )
                continue
            # The first 2xx the client sees may itself be a replay (the function died after
            # storing its response): then the original never reached anyone, and every answer
            # must equal the stored one.
            original = first.setdefault(exchange.key, exchange)
            if original is exchange:
                continue
            if (exchange.status, exchange.body) != (original.status, original.body):
                violations.append(
                    f"key {exchange.key}: a later answer {exchange.status} {exchange.body} differs from "
                    f"the first {original.status} {original.body}"
                )
        return violations

    def contract_violations(self) -> list[str]:
        return contract_violations(
            self.exchanges, stage=self.functions[self.function("Api")].environment["STAGE"]
        )

    def replays(self) -> int:
        return sum(1 for exchange in self.exchanges if exchange.replayed)

    # --- SQS, with faults -----------------------------------------------------------------------
    def visibility_timeout(self, queue_output: str) -> int:
        if queue_output not in self._visibility:
            attributes = self.sqs.get_queue_attributes(
                QueueUrl=self.outputs[queue_output], AttributeNames=["VisibilityTimeout"]
            )["Attributes"]
            self._visibility[queue_output] = int(attributes.get("VisibilityTimeout", 30))
        return self._visibility[queue_output]

    def deliver(self, queue_output: str, *, duplicates: int = 0, batch_size: int = 10) -> int:
        """One poll of the event source mapping: receive a batch, invoke the consumer (1 +
        `duplicates` times with the same records), delete what succeeded at least once. What did
        not comes back after the visibility timeout (the clock jumps by it)."""
        url = self.outputs[queue_output]
        messages, event = self.receive_batch(queue_output, batch_size=batch_size)
        if not messages:
            return 0
        succeeded: set[str] = set()
        for copy in range(1 + duplicates):
            if copy:
                self.recovery.duplicate_deliveries += 1
            try:
                response = self.invoke(self.queue_consumers[queue_output], event)
            except LambdaError:
                continue
            failed = {item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])}
            succeeded |= {m["MessageId"] for m in messages} - failed
        returned = 0
        for message in messages:
            if message["MessageId"] in succeeded:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            else:
                returned += 1
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
        if returned:
            self.recovery.redeliveries += returned
            self.clock.advance(self.visibility_timeout(queue_output))
        return len(messages)

    def drain_queue(self, queue_output: str, *, max_rounds: int = 30) -> int:
        handled = 0
        for _ in range(max_rounds):
            received = self.deliver(queue_output)
            if not received:
                break
            handled += received
        return handled

    def redrive_dlqs(self) -> int:
        moved = 0
        for dlq, source in self.dlqs.items():
            result = redrive_dlq(self.sqs, dlq_url=self.outputs[dlq], destination_url=self.outputs[source])
            moved += result.moved or 0
        self.recovery.dlq_redrives += moved
        return moved

    def send_next_run(self, order_id: str) -> None:
        """A message for the order's next run (`{"order_id", "run", "idempotency_key"}`) that no
        operator decided on: an old tool, a replayed export. Only `make rerun` may start a run."""
        item = self.dynamodb.get_item(
            TableName=self.outputs["OrdersTableName"],
            Key=order_key(order_id),
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return
        run, key = int(item["run"]["N"]) + 1, item["idempotency_key"]["S"]
        message = {"order_id": order_id, "run": run, "idempotency_key": key}
        self.sqs.send_message(QueueUrl=self.outputs["OrdersQueueUrl"], MessageBody=json.dumps(message))
        self.recovery.stray_runs += 1

    # --- Step Functions -------------------------------------------------------------------------
    def step_lease_seconds(self) -> int:
        return max(self.functions[name].timeout for name in self.step_functions)

    def redrive_failed(self) -> int:
        """An operator's redrive of every failed execution (restart with the same token on moto),
        once the dead attempts' leases have passed."""
        failed = [e for e in self.executions() if e["status"] in ("FAILED", "TIMED_OUT", "ABORTED")]
        if not failed:
            return 0
        self.clock.advance(self.step_lease_seconds() + 1)
        redriven = redrive_failed_executions(self.sfn, state_machine_arn=self.outputs["StateMachineArn"])
        self.recovery.operator_redrives += len(redriven)
        return len(redriven)

    def restart_same_token(self) -> int:
        """Start every order's workflow again under a new name with the same input (same token)."""
        started = 0
        seen: set[str] = set()
        for execution in self.executions():
            described = self.sfn.describe_execution(executionArn=execution["executionArn"])
            if described["input"] in seen:
                continue
            seen.add(described["input"])
            self.sfn.start_execution(
                stateMachineArn=self.outputs["StateMachineArn"],
                name=f"{execution['name'].split('-restart-')[0]}-again-{len(self.executions())}",
                input=described["input"],
            )
            started += 1
        self.recovery.restarts += started
        return started

    def recover(self, *, rounds: int = 12) -> None:
        """Drive everything to rest: the platform's own recovery, then an operator's redrives.
        Ends with no execution running, so nothing of this world runs on into the next one
        (moto's backends are process-global)."""
        self.rest(rounds=rounds, operator=True)

    def rest(self, *, rounds: int = 12, operator: bool = False) -> None:
        """What the platform does by itself until nothing moves: the event source mappings poll
        the queues, executions run, and once everything is quiet the scheduled functions run
        (the sweeper, when its bound has passed); with `operator`, failed executions are also
        redriven."""
        swept = False
        for _ in range(rounds):
            moved = self.drain_queue("OrdersQueueUrl")
            self.wait_all()
            moved += sum(self.drain_queue(q) for q in self.queue_consumers if q != "OrdersQueueUrl")
            if operator:
                moved += self.redrive_failed()
            if moved == 0 and not swept:
                swept = True
                moved = self.run_scheduled()
            if moved == 0:
                break
        self.wait_all()

    def pass_time(self, seconds: float) -> int:
        """Days pass: the platform comes to rest by itself (nobody redrives), then the clock
        jumps and DynamoDB deletes what expired meanwhile. Returns the items expired."""
        self.rest()
        return self.advance(seconds)

    # --- scheduled functions (EventBridge rules) ------------------------------------------------
    def scheduled(self) -> list[tuple[str, int]]:
        """(function, seconds until it finds work) of every scheduled rule's target: its period
        plus the age it waits for (the sweeper's STRANDED_AFTER_SECONDS)."""
        resources = self.app_template["Resources"]
        out = []
        for rule in resources.values():
            expression = str(rule["Properties"].get("ScheduleExpression", ""))
            if rule["Type"] != "AWS::Events::Rule" or not expression.startswith("rate("):
                continue
            amount, unit = expression[len("rate(") : -1].split()
            period = int(amount) * _UNIT_SECONDS[unit.rstrip("s")]
            for target in rule["Properties"].get("Targets", []):
                name = resources[target["Arn"]["Fn::GetAtt"][0]]["Properties"]["FunctionName"]
                age = int(self.functions[name].environment.get("STRANDED_AFTER_SECONDS", 0))
                out.append((name, period + age))
        return out

    def run_scheduled(self) -> int:
        """Let the scheduled functions' time come (the simulator fires each schedule whose tick
        the jump crosses, `simulator.rules`); returns how many invocations that made."""
        due = self.scheduled()
        before = len(self.invocations)
        if due:
            self.advance(max(wait for _, wait in due))
        return len(self.invocations) - before

    def invocation_errors(self) -> Counter[str]:
        return Counter(i.error_type for i in self.invocations if i.error_type)


def setup_outcomes(cloud: ChaosCloud) -> None:
    """The last sku gets stock 1 (and `seeded_stock` 1), so an order of 2 is out of stock."""
    cloud.dynamodb.update_item(
        TableName=cloud.outputs["InventoryTableName"],
        Key=catalog_key("sku-20"),
        UpdateExpression="SET stock = :one, seeded_stock = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )


@contextmanager
def chaos_cloud(
    assembly: Path,
    *,
    control: bool = False,
    seed: int = 0,
    controller: CrashController | None = None,
    clock: Clock | None = None,
    mutant: Mutant | None = None,
) -> Iterator[ChaosCloud]:
    """A moto world with the assembly deployed and seeded, and the handlers installed (a fresh
    world, or inside `simulator.world.reusing()` the reused one put back to its seeded state);
    `control=True` builds every function with `unfenced_runtime` (fences, HTTP idempotency and dedup off)."""
    from chaos.control import unfenced_runtime  # noqa: PLC0415
    from ops.seed import seed_inventory  # noqa: PLC0415

    def seed_world(cloud: InProcessCloud) -> None:
        seed_inventory(cloud.dynamodb, cloud.outputs["InventoryTableName"])
        setup_outcomes(cast(ChaosCloud, cloud))

    random.seed(seed)  # the Retry jitter of moto's interpreter
    clock = clock or Clock()
    factory: RuntimeFactory = unfenced_runtime if control else orders_runtime.Runtime
    with ExitStack() as stack:
        cloud = ChaosCloud(
            assembly, controller=controller, clock=clock, runtime_factory=factory, mutant=mutant
        )
        stack.enter_context(deployed(cloud, seed=seed_world))
        stack.enter_context(mock.patch(f"{_SFN_LAMBDA}.boto_client_for", POOL.for_step_functions))
        stack.enter_context(cloud.installed())
        try:
            yield cloud
        finally:
            # Whatever happened, no execution of this world may run on into the next one.
            with contextlib.suppress(Exception):
                cloud.wait_all(timeout=30)


def rest_post(key: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The API Gateway event of `POST /orders` (for attempts run directly on threads)."""
    return rest_event("POST", "/orders", body=dict(body), headers={"Idempotency-Key": key})
