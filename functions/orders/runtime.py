"""The composition root: clients and adapters, built ONCE per cold start, lazily, from the
function's settings (orders.config: one model per kind of function).

Handlers ask `current(<their settings class>)` for the runtime; nothing is built at import time.
Every boto3 client is instrumented by the crash plan (off unless RETRYSAFE_CRASH_POINTS is set). Tests build a
`Runtime` themselves (moto-backed clients, a controllable clock, a crash plan) and `install()` it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import botocore.session
from aws_lambda_powertools import Metrics
from botocore.config import Config

from orders import workflow as declared
from orders.adapters.dynamo import DynamoAggregates, DynamoCatalog, DynamoLedger, DynamoNotifications
from orders.adapters.order_store import DynamoOrderStore
from orders.adapters.payments import FakePaymentProvider
from orders.config import (
    ConsumerSettings,
    FunctionSettings,
    MissingSetting,
    QueueFedSettings,
    WorkerSettings,
)
from reliability import faults
from reliability.observability import logger, metrics
from reliability.sqs import SqsQueue
from reliability.stepfunctions import ExpressStepFunctionsWorkflow, StepFunctionsWorkflow
from reliability.telemetry import Telemetry

if TYPE_CHECKING:
    from orders.consumers import EventConsumer
    from orders.domain import Order
    from orders.saga import SagaContext
    from orders.service import OrderService
    from reliability.batch import DeadLetters
    from reliability.dedup import ConsumerDedup
    from reliability.faults import FaultPlan
    from reliability.http import HttpIdempotency
    from reliability.runs import FenceStore
    from reliability.workflow_runs import Reruns, WorkflowStarter

# Cold start: a function imports only what it uses (bench/coldstart.py). The fences (not the
# worker's), the saga (steps and the API's fences only), the use cases, consumer dedup, dead
# letters (Powertools batch, data classes) and HTTP idempotency (Powertools idempotency) are
# imported by the method that builds them, so a kind of function that never builds one never loads
# it. What a kind builds on every invocation its handler module imports itself, at init (its cold
# start); tests/unit/orders/test_handler_imports.py pins both.

ClientFactory = Callable[[str], Any]
# The kind of function a runtime serves; covariant: a Runtime[StepSettings] is a Runtime[FunctionSettings].
S_co = TypeVar("S_co", bound=FunctionSettings, covariant=True)
K = TypeVar("K", bound=FunctionSettings)
# botocore's standard retry mode: up to 3 attempts in the SDK, exponential backoff with jitter on
# throttling, 5xx, TransactionConflict and connection/read timeouts (every call we make is
# conditional or keyed, so a retry is safe; a conditional write sent again after its first attempt
# landed meets its own write, which the HTTP lock and the fences recognise as theirs, and a
# transaction carries botocore's ClientRequestToken). Short timeouts: a step's whole budget is its function
# timeout (20 s); what still fails after these retries becomes TransientError and is retried by the
# state machine or the queue, with backoff measured in seconds rather than milliseconds.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},  # the first call and 2 retries
    connect_timeout=2,
    read_timeout=5,
    tcp_keepalive=True,
)


# StartSyncExecution (an Express run) answers once the execution has ended: its client has no read
# timeout of its own (the worker's function timeout, sized past the execution's time limit by
# infra/capacity.py, is the clock) and never resends the start (a resend would be a second
# execution of the run; the orders queue is its retry).
WAITING_CLIENT_CONFIG = CLIENT_CONFIG.merge(
    Config(read_timeout=None, retries={"mode": "standard", "total_max_attempts": 1})
)


@cache
def _session() -> botocore.session.Session:
    """One botocore session per process, as boto3's default session. botocore, not boto3: the
    functions use plain clients only, and importing boto3 loads s3transfer (see adapters/_dynamo)."""
    return botocore.session.get_session()


def default_client_factory(service_name: str) -> Any:
    return _session().create_client(service_name, config=CLIENT_CONFIG)


def default_waiting_client_factory(service_name: str) -> Any:
    """A client whose calls may wait as long as the function runs (WAITING_CLIENT_CONFIG)."""
    return _session().create_client(service_name, config=WAITING_CLIENT_CONFIG)


class Runtime(Generic[S_co]):
    """Lazily built, cached adapters. Thread-safe enough for Lambda (one event at a time) and for
    moto's Step Functions worker threads (cached_property may build twice; both are equivalent)."""

    def __init__(
        self,
        settings: S_co,
        *,
        client_factory: ClientFactory = default_client_factory,
        crash_plan: FaultPlan | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Telemetry | None = None,
        fence_store_class: type[FenceStore] | None = None,
        http_idempotency_class: type[HttpIdempotency] | None = None,
        waiting_client_factory: ClientFactory | None = None,
    ) -> None:
        """`fence_store_class` (every step fence and consumer dedup; default
        `reliability.runs.FenceStore`) and `http_idempotency_class` (default
        `reliability.http.HttpIdempotency`) are the guards; the chaos control run hands in
        pass-throughs to show what they prevent. `waiting_client_factory` builds the client an
        Express run waits on: by default `default_waiting_client_factory` where clients
        are the default ones (AWS, the local cloud), else `client_factory` itself (an
        in-process cloud has no socket to time out)."""
        self.settings = settings
        self._fence_store_class = fence_store_class
        self._http_idempotency_class = http_idempotency_class
        self._factory = client_factory
        self._waiting_factory = waiting_client_factory or (
            default_waiting_client_factory if client_factory is default_client_factory else client_factory
        )
        plan = crash_plan if crash_plan is not None else faults.active_plan()
        # One plan may serve every function of an in-process cloud: arm its entries scoped to this one.
        self.crash_plan = plan.for_function(settings.function_name) if plan is not None else None
        self.clock = clock
        # POWERTOOLS_METRICS_NAMESPACE is set on every function; without it (a test process), the
        # service name is the namespace, so decisions are still emitted as valid EMF.
        self.telemetry = telemetry or Telemetry(
            logger=logger, metrics=metrics if metrics.namespace else Metrics(namespace=settings.service)
        )
        self._fences: dict[str, FenceStore] = {}
        self._lock = threading.Lock()

    def kind(self, kind: type[K]) -> K:
        """The settings as `kind`: a use case that belongs to one kind of function (the worker's
        starter, a consumer's effect) asks for it; any other function gets MissingSetting."""
        if not isinstance(self.settings, kind):
            raise MissingSetting(f"{type(self.settings).__name__} is not {kind.__name__}")
        return self.settings

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def _client(self, service_name: str) -> Any:
        client = self._factory(service_name)
        return self.crash_plan.instrument(client) if self.crash_plan is not None else client

    @cached_property
    def dynamodb(self) -> Any:
        return self._client("dynamodb")

    @cached_property
    def sqs(self) -> Any:
        return self._client("sqs")

    @cached_property
    def stepfunctions(self) -> Any:
        return self._client("stepfunctions")

    @cached_property
    def waiting_stepfunctions(self) -> Any:
        """The Step Functions client an Express run waits on (StartSyncExecution)."""
        client = self._waiting_factory("stepfunctions")
        return self.crash_plan.instrument(client) if self.crash_plan is not None else client

    # --- fences -------------------------------------------------------------------------------
    def fences(self, namespace: str, *, table: str = "fences", ttl_seconds: int | None = None) -> FenceStore:
        """One FenceStore per namespace (`saga` for steps, a consumer's name for consumer dedup)."""
        with self._lock:
            store = self._fences.get(namespace)
            if store is None:
                from reliability.runs import FenceStore  # noqa: PLC0415 - cold start, see the imports

                store = (self._fence_store_class or FenceStore)(
                    client=self.dynamodb,
                    table_name=self.settings.table(table),
                    ttl_seconds=ttl_seconds or self.settings.fence_ttl_seconds,
                    telemetry=self.telemetry,
                    namespace=namespace,
                    clock=self.clock,
                    stage=self.settings.stage,
                    crash_plan=self.crash_plan,
                )
                self._fences[namespace] = store
            return store

    def dedup(self, consumer: str) -> FenceStore:
        """Consumer dedup records live in the idempotency table with the dedup TTL."""
        return self.fences(consumer, table="idempotency", ttl_seconds=self.settings.dedup_ttl_seconds)

    # --- adapters -----------------------------------------------------------------------------
    @cached_property
    def orders(self) -> DynamoOrderStore:
        return DynamoOrderStore(client=self.dynamodb, table_name=self.settings.table("orders"))

    @cached_property
    def catalog(self) -> DynamoCatalog:
        return DynamoCatalog(client=self.dynamodb, table_name=self.settings.table("inventory"))

    @cached_property
    def payments(self) -> FakePaymentProvider:
        return FakePaymentProvider(
            client=self.dynamodb,
            table_name=self.settings.table("payments"),
            key_lifetime_seconds=self.settings.provider_key_lifetime_seconds,
            clock=self.clock,
        )

    @cached_property
    def ledger(self) -> DynamoLedger:
        return DynamoLedger(table_name=self.settings.table("ledger"))

    @cached_property
    def notifications(self) -> DynamoNotifications:
        return DynamoNotifications(table_name=self.settings.table("notifications"))

    @cached_property
    def aggregates(self) -> DynamoAggregates:
        return DynamoAggregates(table_name=self.settings.table("aggregates"))

    def table_name(self, table: str) -> str:
        """A table this function was granted, by its short name (`notifications`)."""
        return self.settings.table(table)

    def queue(self, queue: str) -> SqsQueue:
        """A queue this function was granted, by name (`orders`, `notify`, `notify-dlq`)."""
        return SqsQueue(client=self.sqs, queue_url=self.settings.queue(queue))

    # --- use cases ----------------------------------------------------------------------------
    @cached_property
    def order_service(self) -> OrderService:
        from orders.saga import SAGA_NAMESPACE  # noqa: PLC0415 - cold start, see the imports
        from orders.service import OrderService  # noqa: PLC0415 - cold start, see the imports

        return OrderService(
            catalog=self.catalog,
            orders=self.orders,
            payments=self.payments,
            queue=self.queue("orders"),
            clock=self.now,
            stage=self.settings.stage,
            fences=self.fences(SAGA_NAMESPACE),
            table_name=self.table_name,
        )

    @cached_property
    def workflow_starter(self) -> WorkflowStarter[Order]:
        from orders.runs import WorkflowStarter, workflow_input  # noqa: PLC0415 - cold start, see the imports

        settings = self.kind(WorkerSettings)
        arn = settings.state_machine_arn
        return WorkflowStarter(
            stage=self.settings.stage,
            entity=declared.SERVICE.entity,
            store=self.orders,
            workflow=StepFunctionsWorkflow(client=self.stepfunctions, state_machine_arn=arn),
            telemetry=self.telemetry,
            workflow_input=workflow_input,
            express=(
                ExpressStepFunctionsWorkflow(client=self.waiting_stepfunctions, state_machine_arn=arn)
                if settings.express
                else None
            ),
        )

    @cached_property
    def reruns(self) -> Reruns[Order]:
        """The sweep's and the operator's re-sends of an order's message."""
        from reliability.workflow_runs import Reruns  # noqa: PLC0415 - cold start, see the imports

        return Reruns(
            entity=declared.SERVICE.entity, store=self.orders, queue=self.queue(declared.SERVICE.queue)
        )

    def consumer_dedup(self, consumer: str) -> ConsumerDedup:
        from reliability.dedup import ConsumerDedup  # noqa: PLC0415 - cold start, see the imports

        return ConsumerDedup(fences=self.dedup(consumer), consumer=consumer, telemetry=self.telemetry)

    @cached_property
    def event_consumer(self) -> EventConsumer:
        """This function's consumer (`CONSUMER_NAME`), its effect resolved from orders.workflow."""
        from orders.consumers import EventConsumer, effect_of  # noqa: PLC0415 - cold start

        name = self.kind(ConsumerSettings).consumer_name
        return EventConsumer(
            name=name, effect=effect_of(name), ports=self, orders=self.orders, dedup=self.consumer_dedup(name)
        )

    def http_idempotency(self) -> HttpIdempotency:
        """A fresh one per invocation: Powertools' persistence layer keeps per-call state."""
        from aws_lambda_powertools.utilities.idempotency import (  # noqa: PLC0415 - cold start
            DynamoDBPersistenceLayer,
        )

        from reliability.http import HttpIdempotency  # noqa: PLC0415 - cold start, see the imports

        persistence = DynamoDBPersistenceLayer(
            table_name=self.settings.table("idempotency"), boto3_client=self.dynamodb
        )
        return (self._http_idempotency_class or HttpIdempotency)(
            persistence=persistence,
            stage=self.settings.stage,
            ttl_seconds=self.settings.idempotency_ttl_seconds,
            telemetry=self.telemetry,
        )

    def dead_letters(self) -> DeadLetters:
        """Where this queue-fed function's poison records go, with their reason."""
        from reliability.batch import DeadLetters  # noqa: PLC0415 - cold start, see the imports

        fed = self.kind(QueueFedSettings)
        return DeadLetters(client=self.sqs, queue_url=fed.queue(fed.dead_letter_queue), source=fed.source)

    @cached_property
    def saga(self) -> SagaContext:
        """Only the ports this function is configured with (infra/stacks/app.py grants one set per step)."""
        from orders.saga import SagaContext  # noqa: PLC0415 - cold start, see the imports

        s = self.settings
        return SagaContext(
            stage=s.stage,
            orders=self.orders if "orders" in s.tables else None,
            clock=self.now,
            inventory=self.catalog if "inventory" in s.tables else None,
            payments=self.payments if "payments" in s.tables else None,
            ledger=self.ledger if "ledger" in s.tables else None,
            # A function granted any consumer's queue publishes to all of them (or fails here).
            event_queues=(
                [self.queue(c.name) for c in declared.CONSUMERS]
                if any(c.name in s.queues for c in declared.CONSUMERS)
                else []
            ),
            event_dedup_seconds=s.dedup_ttl_seconds,
            tables=dict(s.tables),
        )


_current: Runtime[FunctionSettings] | None = None
_current_lock = threading.Lock()
# A per-thread/per-task override: the in-process harness runs every function of the app in one
# process, each with its own settings, on moto's worker threads.
_scoped: ContextVar[Runtime[FunctionSettings] | None] = ContextVar("orders_runtime", default=None)


def current(kind: type[K]) -> Runtime[K]:
    """The runtime for this invocation: a scoped one if set, else the process's, built on first use
    (the cold start) from the environment as `kind`, the handler's settings class."""
    global _current  # noqa: PLW0603 - the one composition root per process
    runtime = _scoped.get()
    if runtime is None:
        with _current_lock:
            if _current is None:
                _current = Runtime(kind.from_env(os.environ))
            runtime = _current
    runtime.kind(kind)  # one process serves one kind of function
    return cast("Runtime[K]", runtime)


def install(runtime: Runtime[FunctionSettings] | None) -> Runtime[FunctionSettings] | None:
    """Replace the process's runtime (tests, the local cloud); returns the previous one."""
    global _current
    with _current_lock:
        previous, _current = _current, runtime
        return previous


@contextmanager
def scoped(runtime: Runtime[FunctionSettings]) -> Iterator[Runtime[FunctionSettings]]:
    """Use `runtime` for handler calls made in this thread/context only."""
    reset = _scoped.set(runtime)
    try:
        yield runtime
    finally:
        _scoped.reset(reset)
