"""What the composition root (`reliability.runtime.Runtime`) hands the library's handlers, each
promise stated by its use: the clients built once by service name from the factory and armed by
the function's crash plan, the Express run's waiting client, the fences and consumer dedup on
their tables with their stage, clock and lifetimes, HTTP idempotency on the idempotency table,
the dead letters of a queue-fed function, the telemetry, the clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from two_step_service import SERVICE

from reliability import faults, observability
from reliability import settings as kinds
from reliability.batch import DeadLetters
from reliability.http import HttpIdempotency, HttpResponse, scoped_key
from reliability.keys import Fact, derive_key
from reliability.record import RECORD_TTL_ATTRIBUTE, StepId
from reliability.runs import FenceStore
from reliability.runtime import Runtime, default_client_factory, default_waiting_client_factory
from reliability.settings import FunctionSettings, MissingSetting
from reliability.telemetry import Telemetry
from reliability_helpers import FENCES, IDEMPOTENCY, REGION, CallCounter, FakeClock, make_telemetry

FENCE_TTL = 3600
DEDUP_TTL = 7200
IDEMPOTENCY_TTL = 900
FUNCTION = "visits-dev-fn"
COMMON: dict[str, Any] = {
    "service": "visits",
    "stage": "dev",
    "function_name": FUNCTION,
    "idempotency_ttl_seconds": IDEMPOTENCY_TTL,
    "fence_ttl_seconds": FENCE_TTL,
    "dedup_ttl_seconds": DEDUP_TTL,
    "provider_key_lifetime_seconds": 600,
}
TABLES = {"fences": FENCES, "idempotency": IDEMPOTENCY}


class ConsumerKind(kinds.ConsumerSettings):
    DECLARATION = SERVICE


class WorkerKind(kinds.WorkerSettings):
    DECLARATION = SERVICE


def plain_settings() -> FunctionSettings:
    return FunctionSettings(**COMMON, tables=TABLES, queues={"visits": "https://sqs/visits"})


@dataclass
class RecordingPlan:
    """A crash plan that records what the runtime does with it: the function it is scoped to,
    the clients it instruments, the points hit."""

    scoped_to: list[str | None] = field(default_factory=list)
    instrumented: list[Any] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)
    scoped: RecordingPlan | None = None

    def for_function(self, function_name: str | None) -> RecordingPlan:
        self.scoped_to.append(function_name)
        self.scoped = RecordingPlan()
        return self.scoped

    def instrument(self, client: Any) -> Any:
        self.instrumented.append(client)
        return client

    def hit(self, point: str) -> None:
        self.hits.append(point)


class Factory:
    """A client factory that builds one named object per call and remembers the names asked for."""

    def __init__(self, label: str = "client") -> None:
        self.label = label
        self.asked: list[str] = []

    def __call__(self, service_name: str) -> Any:
        self.asked.append(service_name)
        return f"{self.label}:{service_name}#{len(self.asked)}"


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def moto_clients(service_name: str) -> Any:
    return boto3.client(service_name, region_name=REGION)


@pytest.fixture
def runtime(ddb: Any, clock: FakeClock) -> Runtime[FunctionSettings]:
    return Runtime(plain_settings(), client_factory=moto_clients, clock=clock, telemetry=make_telemetry())


def items(table: str) -> list[dict[str, Any]]:
    return list(boto3.client("dynamodb", region_name=REGION).scan(TableName=table)["Items"])


# --- clients ------------------------------------------------------------------------------------
def test_each_client_is_built_once_by_its_service_name_from_the_factory() -> None:
    factory = Factory()
    runtime = Runtime(plain_settings(), client_factory=factory)
    assert (runtime.dynamodb, runtime.sqs, runtime.stepfunctions) == (
        "client:dynamodb#1",
        "client:sqs#2",
        "client:stepfunctions#3",
    )
    assert (runtime.dynamodb, runtime.sqs, runtime.stepfunctions) == (
        "client:dynamodb#1",
        "client:sqs#2",
        "client:stepfunctions#3",
    )
    assert factory.asked == ["dynamodb", "sqs", "stepfunctions"]


def test_an_express_run_waits_on_the_given_factorys_client_else_on_the_client_factorys() -> None:
    factory, waiting = Factory(), Factory("waiting")
    assert Runtime(plain_settings(), client_factory=factory).waiting_stepfunctions == "client:stepfunctions#1"
    runtime = Runtime(plain_settings(), client_factory=factory, waiting_client_factory=waiting)
    assert runtime.waiting_stepfunctions == "waiting:stepfunctions#1"
    assert runtime.stepfunctions == "client:stepfunctions#2"


def test_the_default_clients_time_out_and_retry_and_the_express_client_waits_and_never_resends() -> None:
    runtime = Runtime(plain_settings())
    calls, waits = runtime.stepfunctions.meta, runtime.waiting_stepfunctions.meta
    assert (calls.service_model.service_name, calls.config.read_timeout, calls.config.retries) == (
        "stepfunctions",
        5,
        {"mode": "standard", "total_max_attempts": 3},
    )
    assert (waits.service_model.service_name, waits.config.read_timeout, waits.config.retries) == (
        "stepfunctions",
        None,
        {"mode": "standard", "total_max_attempts": 1},
    )


def test_the_default_client_factories_build_the_named_service_with_their_config() -> None:
    client = default_client_factory("dynamodb").meta
    assert (client.service_model.service_name, client.config.connect_timeout, client.config.read_timeout) == (
        "dynamodb",
        2,
        5,
    )
    assert (client.config.retries, client.config.tcp_keepalive) == (
        {"mode": "standard", "total_max_attempts": 3},
        True,
    )
    waiting = default_waiting_client_factory("stepfunctions").meta
    assert (
        waiting.service_model.service_name,
        waiting.config.connect_timeout,
        waiting.config.read_timeout,
    ) == (
        "stepfunctions",
        2,
        None,
    )
    assert waiting.config.retries == {"mode": "standard", "total_max_attempts": 1}


# --- the crash plan -----------------------------------------------------------------------------
def test_the_given_crash_plan_is_scoped_to_this_function_and_arms_every_client() -> None:
    plan, factory, waiting = RecordingPlan(), Factory(), Factory("waiting")
    runtime = Runtime(
        plain_settings(), client_factory=factory, waiting_client_factory=waiting, crash_plan=plan
    )
    assert plan.scoped_to == [FUNCTION]
    assert plan.scoped is not None
    assert runtime.crash_plan is plan.scoped
    assert (runtime.dynamodb, runtime.waiting_stepfunctions) == (
        "client:dynamodb#1",
        "waiting:stepfunctions#1",
    )
    assert plan.scoped.instrumented == ["client:dynamodb#1", "waiting:stepfunctions#1"]


def test_without_a_given_plan_the_cold_starts_plan_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    cold_start = RecordingPlan()
    monkeypatch.setattr(faults, "active_plan", lambda: cold_start)
    runtime = Runtime(plain_settings(), client_factory=Factory())
    assert (cold_start.scoped_to, runtime.crash_plan) == ([FUNCTION], cold_start.scoped)


def test_with_no_plan_at_all_the_clients_are_the_factorys_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "active_plan", lambda: None)
    runtime = Runtime(plain_settings(), client_factory=Factory())
    assert (runtime.crash_plan, runtime.dynamodb, runtime.waiting_stepfunctions) == (
        None,
        "client:dynamodb#1",
        "client:stepfunctions#2",
    )


def test_a_fence_hits_the_runtimes_crash_plan(ddb: Any, clock: FakeClock) -> None:
    plan = RecordingPlan()
    runtime = Runtime(plain_settings(), client_factory=moto_clients, clock=clock, crash_plan=plan)
    fences = runtime.fences("saga")
    outcome = fences.run_leased(
        StepId(token="t-1", step="Pay"), attempt_id="a-1", lease_seconds=30, effect=lambda key: {"paid": key}
    )
    assert plan.scoped is not None
    assert plan.scoped.hits == ["fence:after-effect:Pay"]
    assert outcome.result == {"paid": fences.external_key(StepId(token="t-1", step="Pay"))}


# --- telemetry and the clock --------------------------------------------------------------------
def test_the_given_telemetry_is_the_runtimes() -> None:
    telemetry = make_telemetry()
    assert Runtime(plain_settings(), client_factory=Factory(), telemetry=telemetry).telemetry is telemetry


def test_by_default_decisions_go_to_the_functions_logger_and_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observability.metrics, "namespace", "retrysafe")
    telemetry = Runtime(plain_settings(), client_factory=Factory()).telemetry
    assert isinstance(telemetry, Telemetry)
    assert (telemetry.logger, telemetry.metrics) == (observability.logger, observability.metrics)


def test_without_a_metrics_namespace_the_service_is_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observability.metrics, "namespace", None)
    telemetry = Runtime(plain_settings(), client_factory=Factory()).telemetry
    assert telemetry.logger is observability.logger
    assert telemetry.metrics is not observability.metrics
    assert telemetry.metrics.namespace == "visits"


def test_now_is_the_clocks_time_in_utc() -> None:
    runtime = Runtime(plain_settings(), client_factory=Factory(), clock=FakeClock(1_800_000_000.0))
    now = runtime.now()
    assert (now, now.tzinfo) == (datetime(2027, 1, 15, 8, 0, tzinfo=UTC), UTC)


# --- fences and consumer dedup --------------------------------------------------------------------
def test_a_namespaces_fences_are_built_once_on_the_fence_table_with_the_stage_clock_and_fence_ttl(
    runtime: Runtime[FunctionSettings], clock: FakeClock
) -> None:
    fences = runtime.fences("saga")
    assert runtime.fences("saga") is fences
    assert runtime.fences("audit") is not fences
    assert (type(fences), fences.namespace, fences.stage) == (FenceStore, "saga", "dev")
    step = StepId(token="t-1", step="Pay")
    fences.claim(step, attempt_id="a-1", lease_seconds=30)
    [item] = items(FENCES)
    assert item["id"]["S"] == derive_key("saga", stage="dev", identity=step.identity()).value
    assert item[RECORD_TTL_ATTRIBUTE]["N"] == str(int(clock.now) + FENCE_TTL)
    assert items(IDEMPOTENCY) == []


def test_fences_may_be_given_their_table_and_ttl(
    runtime: Runtime[FunctionSettings], clock: FakeClock
) -> None:
    fences = runtime.fences("audit", table="idempotency", ttl_seconds=60)
    fences.claim(StepId(token="t-1", step="audit"), attempt_id="a-1", lease_seconds=30)
    [item] = items(IDEMPOTENCY)
    assert item[RECORD_TTL_ATTRIBUTE]["N"] == str(int(clock.now) + 60)
    with pytest.raises(MissingSetting, match=r"^FunctionSettings is not given the entries table$"):
        runtime.fences("other", table="entries")


def test_a_runtime_given_a_fence_store_class_builds_its_fences_with_it() -> None:
    class PassThrough(FenceStore):
        pass

    runtime = Runtime(plain_settings(), client_factory=Factory(), fence_store_class=PassThrough)
    assert type(runtime.fences("saga")) is PassThrough
    assert type(runtime.dedup("audit")) is PassThrough


def test_consumer_dedup_records_in_the_idempotency_table_under_the_consumers_name_with_the_dedup_ttl(
    runtime: Runtime[FunctionSettings], clock: FakeClock
) -> None:
    dedup = runtime.consumer_dedup("audit")
    assert (dedup.consumer, dedup.stage) == ("audit", "dev")
    assert runtime.dedup("audit") is runtime.dedup("audit")
    fact = Fact(kind="VisitPaid", subject="v-1")
    outcome = dedup.apply_leased(fact, attempt_id="a-1", lease_seconds=30, effect=lambda key: {"sent": key})
    step = StepId(token=fact.id(stage="dev"), step="audit")
    key = derive_key("audit", stage="dev", identity=step.identity()).value
    assert (outcome.result, outcome.skipped) == ({"sent": key}, False)
    [item] = items(IDEMPOTENCY)
    assert (item["id"]["S"], item[RECORD_TTL_ATTRIBUTE]["N"]) == (key, str(int(clock.now) + DEDUP_TTL))
    assert items(FENCES) == []
    again = dedup.apply_leased(fact, attempt_id="a-2", lease_seconds=30, effect=lambda key: {"sent": "twice"})
    assert (again.result, again.skipped) == ({"sent": key}, True)


# --- HTTP idempotency ---------------------------------------------------------------------------
def test_http_idempotency_is_fresh_per_invocation_and_stores_on_the_idempotency_table_with_its_ttl(
    runtime: Runtime[FunctionSettings],
) -> None:
    calls = CallCounter(runtime.dynamodb)
    http = runtime.http_idempotency()
    assert type(http) is HttpIdempotency
    assert runtime.http_idempotency() is not http
    route, caller = "POST /visits", "alice"
    key = http.checked_key(route=route, caller=caller, headers={"Idempotency-Key": "k-1"})
    assert key == scoped_key(stage="dev", route=route, raw_key="k-1", caller=caller)
    before = int(time.time())
    response = http.handle(
        route=route,
        key=key,
        payload={"seats": 2},
        lambda_context=Context(),
        execute=lambda: HttpResponse(201, {"ok": 1}),
    )
    after = int(time.time())
    assert (response.status, response.body) == (201, {"ok": 1})
    [item] = items(IDEMPOTENCY)
    assert before + IDEMPOTENCY_TTL <= int(item["expiration"]["N"]) <= after + IDEMPOTENCY_TTL
    assert items(FENCES) == []
    assert "PutItem" in calls.take()  # the runtime's own (instrumented) client


def test_a_runtime_given_an_http_idempotency_class_builds_it(ddb: Any) -> None:
    class PassThrough(HttpIdempotency):
        pass

    runtime = Runtime(plain_settings(), client_factory=moto_clients, http_idempotency_class=PassThrough)
    assert type(runtime.http_idempotency()) is PassThrough


# --- tables, queues, dead letters -----------------------------------------------------------------
def test_a_table_or_queue_is_the_one_granted_by_its_short_name() -> None:
    sent: list[dict[str, Any]] = []

    class Sqs:
        def send_message(self, **params: Any) -> dict[str, Any]:
            sent.append(params)
            return {"MessageId": "m-1"}

    runtime = Runtime(plain_settings(), client_factory=lambda _name: Sqs())
    assert runtime.table_name("fences") == FENCES
    with pytest.raises(MissingSetting, match=r"^FunctionSettings is not given the entries table$"):
        runtime.table_name("entries")
    assert runtime.queue("visits").send({"b": 2, "a": 1}) == "m-1"
    assert sent == [{"QueueUrl": "https://sqs/visits", "MessageBody": '{"a": 1, "b": 2}'}]


def test_a_consumers_poison_goes_to_its_dlq_named_as_its_source() -> None:
    settings = ConsumerKind(
        **COMMON, tables=TABLES, queues={"audit-dlq": "https://sqs/audit-dlq"}, consumer_name="audit"
    )
    runtime = Runtime(settings, client_factory=Factory())
    assert runtime.dead_letters() == DeadLetters(
        client="client:sqs#1", queue_url="https://sqs/audit-dlq", source="audit"
    )


def test_the_workers_poison_goes_to_the_services_dlq_named_worker() -> None:
    settings = WorkerKind(
        **COMMON,
        tables={"visits": "visits-dev"},
        queues={"visits-dlq": "https://sqs/visits-dlq"},
        state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:visits",
        throttle_backoff_seconds=(10,),
        workflow_type="STANDARD",
        max_receive_count=3,
    )
    runtime = Runtime(settings, client_factory=Factory())
    assert runtime.dead_letters() == DeadLetters(
        client="client:sqs#1", queue_url="https://sqs/visits-dlq", source="worker"
    )


def test_a_function_no_queue_feeds_has_no_dead_letters() -> None:
    runtime = Runtime(plain_settings(), client_factory=Factory())
    with pytest.raises(MissingSetting, match=r"^FunctionSettings is not QueueFedSettings$"):
        runtime.dead_letters()
