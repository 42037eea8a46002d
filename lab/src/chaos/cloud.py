"""`ChaosCloud`: the integration harness's in-process cloud, plus what fault schedules need.

Built on `simulator.cloud.InProcessCloud` (the whole chain on moto, deployed from the
synthesized assembly, real handler code). Added here, without touching the simulator:

- every function's runtime gets a `chaos.points.FunctionPlan` from one `CrashController`, and
  its class is injectable (`chaos.control.unfenced_runtime` for the control run);
- every invocation is counted for the report (crashes, which the harness returns as
  `Runtime.ExitError`, and the step retries they cause); the harness's `Clock` already drives
  Powertools' idempotency time and the Step Functions Retry waits;
- SQS delivery like the event source mapping, with faults, and `recover()`: drive everything to
  rest, redriving failed executions as an operator would (`chaos.recovery`);
- an HTTP client that retries with the same Idempotency-Key and records every response
  (`chaos.exchanges`); boto3 clients built once per process (`chaos.pool`).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from chaos.audit import FenceAudit
from chaos.callers import CallerLog
from chaos.exchanges import Exchange, HttpClient
from chaos.foreign import ForeignLog
from chaos.mutant import Mutant, instrument
from chaos.points import CrashController
from chaos.pool import POOL
from chaos.recovery import RecoveringCloud, Recovery
from emulator.shapes import EXIT_ERROR, TIMED_OUT
from emulator.templates import queue_consumers, workflow_tasks
from ops.service import composition_root, service
from ops.target import CLIENT_CONFIG as OPERATOR_CLIENT_CONFIG
from reliability.runtime import CLIENT_CONFIG, Runtime
from reliability.settings import FunctionSettings
from reliability.testing.crashpoints import SimulatedCrash
from simulator.cloud import Clock, InProcessCloud, rest_event
from simulator.world import deployed

RuntimeFactory = Callable[..., Runtime[FunctionSettings]]
_SFN_LAMBDA = "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils"


def short_name(physical: str, environment: Mapping[str, str]) -> str:
    """`retrysafe-local-hold-seat` -> `hold-seat` (`{service}-{stage}-{name}`; the
    service's name may hold dashes itself)."""
    return physical.removeprefix(f"{environment['SERVICE_NAME']}-{environment['STAGE']}-")


class ChaosCloud(HttpClient, RecoveringCloud):
    def __init__(
        self,
        assembly: Path,
        *,
        controller: CrashController | None = None,
        clock: Clock | None = None,
        runtime_factory: RuntimeFactory | None = None,
        mutant: Mutant | None = None,
    ) -> None:
        super().__init__(assembly, clock=clock)
        self.mutant = mutant
        if mutant is not None and mutant.template is not None:
            mutant.template(self.app_template)  # before deploy(): what synth would emit
        self.controller = controller or CrashController()
        self.controller.wait = self.clock.advance  # a lost answer's read timeout passes
        self.controller.time_limit = self._time_limit_here  # an Express execution's limit reached
        # the service's own runtime (`Service.runtime`) unless told otherwise (the control's)
        self.runtime_factory = runtime_factory or composition_root(service()).Runtime
        self.exchanges: list[Exchange] = []
        self.callers = CallerLog()  # another caller's reads (`chaos.callers`)
        self.foreign = ForeignLog()  # messages from outside the app (`chaos.foreign`)
        self.recovery = Recovery()
        self.awaiting_operator: set[str] = set()  # entities whose failed execution's redrive was refused
        self.restarted_express: set[str] = set()
        self.operator_violations: list[str] = []
        self.failures: dict[str, tuple[str, str | None]] = {}
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
    def new_runtime(self, function_name: str, settings: FunctionSettings) -> Runtime[FunctionSettings]:
        short = self._short(function_name)
        factory, guards = self.runtime_factory, {}
        if self.mutant is not None and self.mutant.applies(short):
            factory = self.mutant.runtime or factory
            guards = dict(self.mutant.guards)  # the library's guard off for this function alone
        return factory(
            settings,
            client_factory=self._clients_for(short),
            crash_plan=self.controller.plan_for(short),
            clock=self.clock,
            **guards,
        )

    def _short(self, function_name: str) -> str:
        return short_name(function_name, self.functions[function_name].environment)

    def _clients_for(self, function: str) -> Callable[[str], Any]:
        """The function's clients (built as the functions build theirs), with this world's mutant
        (if any) on them."""
        return lambda service: instrument(
            POOL.get(function, service, config=CLIENT_CONFIG), function, self.mutant
        )

    def operator_client(self, tool: str, service: str) -> Any:
        """An operator tool's client (as the tools build theirs), through this world's crash
        controller as `tool` (`ops.rerun`, `ops.redrive`): lost answers reach its calls too."""
        client = instrument(POOL.get(tool, service, config=OPERATOR_CLIENT_CONFIG), tool, self.mutant)
        return self.controller.plan_for(tool).instrument(client)

    def call(self, function_name: str, event: Any) -> Any:
        if function_name in self.step_functions:
            self._held.wait()
        self._handler.name, self._handler.event = function_name, event
        try:
            return super().call(function_name, event)
        finally:
            self._handler.name = self._handler.event = None

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

    def error_type(self, function_name: str, event: Any, error: BaseException) -> str:
        """Counts crashes and the step retries they cause; a crash at a stop point also stops the
        execution (an operator's StopExecution), one at a timeout point becomes `Sandbox.Timedout`."""
        error_type = super().error_type(function_name, event, error)
        if isinstance(error, SimulatedCrash):
            self.recovery.crashed_invocations += 1
            if error.point in self.controller.stops:
                self._stop_execution_of(event)
            if error.point in self.controller.timeouts:
                # The invocation ran out of time: Lambda kills it at its timeout.
                error_type = TIMED_OUT
                self.clock.advance(self.functions[function_name].timeout)
        if function_name in self.step_functions and error_type in (EXIT_ERROR, TIMED_OUT, "FenceBusy"):
            self.recovery.step_retries += 1
        return error_type

    def _stop_execution_of(self, event: Any) -> None:
        """An operator's StopExecution of the execution this step invocation belongs to. Express
        has no StopExecution: there the execution is killed at its time limit instead (the
        invocation, which dies here, hung until then)."""
        token = event.get("token") if isinstance(event, dict) else None
        if self.express:
            if token is not None and self.kill_at_time_limit(token) is not None:
                self.recovery.time_limit_kills += 1
            return
        for execution in self.executions():
            if execution["status"] != "RUNNING":
                continue
            described = self.described(execution["executionArn"])
            if token is not None and json.loads(described["input"]).get("token") == token:
                self.sfn.stop_execution(executionArn=execution["executionArn"], error="OperatorStop")
                self.recovery.stops += 1

    def _time_limit_here(self) -> None:
        """The execution of the step running on this thread reaches its time limit now (Express):
        it ends TIMED_OUT while this invocation runs on to its end."""
        event = getattr(self._handler, "event", None)
        token = event.get("token") if isinstance(event, dict) else None
        if token is not None and self.kill_at_time_limit(token) is not None:
            self.recovery.time_limit_kills += 1


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
    from ops.outcomes import prepare  # noqa: PLC0415
    from ops.seed import seed_service  # noqa: PLC0415
    from ops.stack_outputs import table_names  # noqa: PLC0415

    def seed_world(cloud: InProcessCloud) -> None:
        seed_service(cloud.dynamodb, cloud.outputs)
        # what the outcomes' requests need beyond the seed (the sample's: one catalog item nearly sold out)
        prepare(service(), cloud.dynamodb, table_names(service(), cloud.outputs))

    random.seed(seed)  # the Retry jitter of moto's interpreter
    clock = clock or Clock()
    factory: RuntimeFactory | None = unfenced_runtime if control else None
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
                cloud.wait_all()


def rest_post(key: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The API Gateway event of a POST to the declared starting route (for attempts run directly
    on threads)."""
    from ops.outcomes import starting_route  # noqa: PLC0415

    path = starting_route(service()).path
    return rest_event("POST", path, body=dict(body), headers={"Idempotency-Key": key})
