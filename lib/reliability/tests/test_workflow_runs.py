"""The run model over a service's own entity (a `visit`): the run message, the run store's
transitions on DynamoDB, the worker's one start per (entity, run), the operator's next run and the
sweep of stranded entities."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from reliability.declaration import Entity
from reliability.errors import (
    EntityNotFound,
    ExecutionFailed,
    PoisonMessage,
    RerunRefused,
    RunNotCurrent,
)
from reliability.fields import ShapeError
from reliability.run_store import DynamoRunStore, RunRecord, run_records
from reliability.workflow_runs import (
    ExecutionEnd,
    ExpressWorkflow,
    Reruns,
    RunMessage,
    RunMessages,
    RunStatus,
    WorkflowStarter,
    execution_name,
)
from reliability_helpers import make_telemetry, read_emitted

VISIT = Entity(name="visit", id_prefix="v-", table="visits")
TABLE = "retrysafe-test-visits"


@dataclass(frozen=True)
class Visit:
    """A service's own entity record: its terms (`seats`) and its run."""

    visit_id: str
    seats: int
    idempotency_key: str
    created_at: str
    run: int = 1
    status: RunStatus = RunStatus.ACCEPTED
    execution_arn: str | None = None

    @property
    def entity_id(self) -> str:
        return self.visit_id


def _encode(visit: Visit) -> dict[str, Any]:
    return {
        "visit_id": visit.visit_id,
        "seats": visit.seats,
        "idempotency_key": visit.idempotency_key,
        "created_at": visit.created_at,
        "run": visit.run,
        "status": visit.status.value,
        "execution_arn": visit.execution_arn,
    }


def _decode(item: Mapping[str, Any]) -> Visit:
    return Visit(
        visit_id=item["visit_id"],
        seats=item["seats"],
        idempotency_key=item["idempotency_key"],
        created_at=item["created_at"],
        run=item["run"],
        status=RunStatus(item["status"]),
        execution_arn=item.get("execution_arn"),
    )


def _input(visit: Visit, run: int, token: str) -> dict[str, Any]:
    return {"visit_id": visit.visit_id, "run": run, "token": token, "seats": visit.seats}


class Workflow:
    """A Standard state machine: one execution per name."""

    def __init__(self) -> None:
        self.started: dict[str, Mapping[str, Any]] = {}

    def start(self, *, name: str, payload: Mapping[str, Any]) -> str:
        self.started.setdefault(name, payload)
        return self.execution_arn(name)

    def execution_arn(self, name: str) -> str:
        return f"arn:{name}"


class Express:
    def __init__(self, status: str) -> None:
        self.status = status
        self.runs: list[str] = []

    def run(self, *, name: str, payload: Mapping[str, Any]) -> ExecutionEnd:
        self.runs.append(name)
        return ExecutionEnd(arn=f"arn:x:{name}", status=self.status, started=1.0, stopped=2.0, error="Boom")


class Queue:
    def __init__(self) -> None:
        self.sent: list[Mapping[str, Any]] = []

    def send(self, body: Mapping[str, Any]) -> str:
        self.sent.append(dict(body))
        return str(len(self.sent))


@pytest.fixture
def store(ddb: Any) -> DynamoRunStore[Visit]:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoRunStore(client=ddb, table_name=TABLE, entity=VISIT, encode=_encode, decode=_decode)


def _visit(
    store: DynamoRunStore[Visit], visit_id: str = "v-1", created_at: str = "2026-01-01T00:00:00+00:00"
) -> Visit:
    return store.create(Visit(visit_id=visit_id, seats=2, idempotency_key="key-1", created_at=created_at))


def _starter(
    store: DynamoRunStore[Visit], workflow: Workflow, express: ExpressWorkflow | None = None
) -> WorkflowStarter[Visit]:
    return WorkflowStarter(
        stage="dev",
        entity=VISIT,
        store=store,
        workflow=workflow,
        telemetry=make_telemetry(),
        workflow_input=_input,
        express=express,
    )


def _set_status(store: DynamoRunStore[Visit], ddb: Any, status: RunStatus) -> None:
    ddb.update_item(
        TableName=TABLE,
        Key=store.key("v-1"),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": status.value}},
    )


# --- the run message --------------------------------------------------------------------------


def test_a_run_message_carries_the_entity_id_under_the_entitys_own_field() -> None:
    body = RunMessage("v-1", 2, "key-1").body(VISIT)
    assert body == {"visit_id": "v-1", "run": 2, "idempotency_key": "key-1"}
    assert RunMessages(VISIT).model_validate(body) == RunMessage("v-1", 2, "key-1")


@pytest.mark.parametrize(
    ("field", "body"),
    [
        ("visit_id", {"run": 1, "idempotency_key": "k"}),
        ("visit_id", {"visit_id": "v 1", "run": 1, "idempotency_key": "k"}),
        ("run", {"visit_id": "v-1", "run": 0, "idempotency_key": "k"}),
        ("order_id", {"order_id": "v-1", "run": 1, "idempotency_key": "k"}),
    ],
)
def test_a_run_message_of_another_shape_names_its_field(field: str, body: dict[str, Any]) -> None:
    with pytest.raises(ShapeError) as refused:
        RunMessages(VISIT).model_validate(body)
    assert refused.value.field == field


@pytest.mark.parametrize(("length", "accepted"), [(64, True), (65, False)])
def test_a_run_messages_entity_id_is_at_most_64_characters(length: int, accepted: bool) -> None:
    body = {"visit_id": "v" * length, "run": 1, "idempotency_key": "k"}
    if accepted:
        assert RunMessages(VISIT).model_validate(body).entity_id == "v" * length
        return
    with pytest.raises(ShapeError) as refused:
        RunMessages(VISIT).model_validate(body)
    assert refused.value.field == "visit_id"


# --- the run store ----------------------------------------------------------------------------


def test_the_store_keeps_the_entity_at_its_partition_and_answers_a_second_create_with_the_first(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    first = _visit(store)
    again = store.create(replace(first, seats=3))
    assert again == first
    item = ddb.get_item(TableName=TABLE, Key={"pk": {"S": "visit#v-1"}, "sk": {"S": "visit"}})["Item"]
    assert item["seats"] == {"N": "2"}


def test_a_finished_entity_is_never_marked_running_again_but_its_arn_is_recorded(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    _visit(store)
    _set_status(store, ddb, RunStatus.COMPLETED)
    store.mark_running("v-1", run=1, execution_arn="arn:late")
    stored = store.get("v-1")
    assert stored is not None
    assert (stored.status, stored.execution_arn) == (RunStatus.COMPLETED, "arn:late")


# --- the worker: one start per (entity, run) ---------------------------------------------------


def test_the_worker_starts_the_current_run_once_with_the_services_input(store: DynamoRunStore[Visit]) -> None:
    _visit(store)
    workflow = Workflow()
    starter = _starter(store, workflow)
    message = RunMessage("v-1", 1, "key-1")
    assert starter.start_once(message) == "arn:v-1-r1"
    assert starter.start_once(message) == "arn:v-1-r1"  # a duplicate message: the read only
    assert list(workflow.started) == [execution_name("v-1", 1)]
    assert workflow.started["v-1-r1"]["seats"] == 2
    stored = store.get("v-1")
    assert stored is not None
    assert (stored.status, stored.execution_arn) == (RunStatus.RUNNING, "arn:v-1-r1")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (RunMessage("v-2", 1, "key-1"), "no visit 'v-2'"),
        (RunMessage("v-1", 1, "key-2"), "key lineage does not match visit 'v-1'"),
        (RunMessage("v-1", 2, "key-1"), "message run 2 is not visit v-1's current run 1"),
    ],
)
def test_a_message_that_can_never_start_is_poison(
    store: DynamoRunStore[Visit], message: RunMessage, reason: str
) -> None:
    _visit(store)
    workflow = Workflow()
    with pytest.raises(PoisonMessage, match=reason):
        _starter(store, workflow).start_once(message)
    assert workflow.started == {}


def test_the_worker_starts_a_run_with_the_input_for_its_run_and_token(store: DynamoRunStore[Visit]) -> None:
    visit = _visit(store)
    workflow = Workflow()
    _starter(store, workflow).start_once(RunMessage("v-1", 1, "key-1"))
    assert workflow.started == {"v-1-r1": _input(visit, 1, "dev.v-1.r1")}


def test_a_duplicate_message_of_a_started_run_is_one_dedup_line_and_no_start(
    store: DynamoRunStore[Visit], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given run 1 started (RUNNING, its ARN recorded)
    _visit(store)
    store.mark_running("v-1", run=1, execution_arn="arn:first")
    capsys.readouterr()
    workflow = Workflow()
    # When its message comes again, nothing starts: the answer is the recorded ARN
    assert _starter(store, workflow).start_once(RunMessage("v-1", 1, "key-1")) == "arn:first"
    assert workflow.started == {}
    hit = _decision(capsys, "DedupHit")
    assert (hit["token"], hit["step"], hit["status"], hit["entity_id"], hit["run"]) == (
        "dev.v-1.r1",
        "worker",
        "RUNNING",
        "v-1",
        1,
    )


def test_the_current_run_of_an_entity_finished_by_hand_records_its_arn_and_starts_nothing(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    # Given run 1 COMPLETED without an execution recorded (its steps were run by hand)
    _visit(store)
    _set_status(store, ddb, RunStatus.COMPLETED)
    workflow = Workflow()
    # When its message comes, the run's ARN is answered and recorded, and nothing starts
    assert _starter(store, workflow).start_once(RunMessage("v-1", 1, "key-1")) == "arn:v-1-r1"
    assert workflow.started == {}
    stored = store.get("v-1")
    assert stored is not None
    assert (stored.status, stored.execution_arn) == (RunStatus.COMPLETED, "arn:v-1-r1")


@pytest.mark.parametrize(("express", "answer"), [(None, "arn:v-1-r1"), (Express("SUCCEEDED"), "v-1-r1")])
def test_a_late_message_of_an_earlier_run_is_a_duplicate_answered_with_its_execution(
    store: DynamoRunStore[Visit],
    ddb: Any,
    capsys: pytest.CaptureFixture[str],
    express: Express | None,
    answer: str,
) -> None:
    # Given a visit on run 2 (run 1 FAILED, run 2 accepted)
    _visit(store)
    _set_status(store, ddb, RunStatus.FAILED)
    store.start_next_run("v-1", run=1)
    capsys.readouterr()
    workflow = Workflow()
    # When run 1's message comes late, nothing starts or runs: the answer is run 1's execution
    assert _starter(store, workflow, express).start_once(RunMessage("v-1", 1, "key-1")) == answer
    assert workflow.started == {}
    assert express is None or express.runs == []
    # And the duplicate is one line naming the run it was for and the entity's current run
    hit = _decision(capsys, "DedupHit")
    assert {name: hit.get(name) for name in ("token", "step", "status", "run", "current_run")} == {
        "token": "dev.v-1.r1",
        "step": "worker",
        "status": "ACCEPTED",
        "run": 1,
        "current_run": 2,
    }


def test_a_later_run_is_not_current_when_started_directly(store: DynamoRunStore[Visit]) -> None:
    _visit(store)
    with pytest.raises(RunNotCurrent):
        _starter(store, Workflow()).start(RunMessage("v-1", 2, "key-1"))


class Ending:
    """An Express state machine whose executions end as `end` says; it records each run's input."""

    def __init__(self, end: ExecutionEnd) -> None:
        self.end = end
        self.runs: list[tuple[str, Mapping[str, Any]]] = []

    def run(self, *, name: str, payload: Mapping[str, Any]) -> ExecutionEnd:
        self.runs.append((name, payload))
        return self.end


def _decision(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, Any]:
    """The one line the decision `name` wrote."""
    [line] = [line for line in read_emitted(capsys.readouterr().out).decisions() if line["decision"] == name]
    return line


def test_an_express_run_runs_with_the_services_input_and_logs_how_it_ended(
    store: DynamoRunStore[Visit], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an Express execution that fails with a long cause
    visit = _visit(store)
    cause = "x" * 600
    express = Ending(
        ExecutionEnd(
            arn="arn:x:v-1-r1", status="FAILED", started=10.5, stopped=12.25, error="Boom", cause=cause
        )
    )
    # When the worker runs the visit's current run
    with pytest.raises(ExecutionFailed):
        _starter(store, Workflow(), express).start_once(RunMessage("v-1", 1, "key-1"))
    # Then it ran once, under the run's name, with the service's input for the run's token
    assert express.runs == [("v-1-r1", _input(visit, 1, "dev.v-1.r1"))]
    # And how it ended is one line: the execution, its times, its error and the head of its cause
    ended = _decision(capsys, "ExecutionEnded")
    expected = {
        "entity_id": "v-1",
        "run": 1,
        "token": "dev.v-1.r1",
        "step": "worker",
        "execution": "arn:x:v-1-r1",
        "status": "FAILED",
        "started": 10.5,
        "stopped": 12.25,
        "error": "Boom",
        "cause": "x" * 512,
    }
    assert {name: ended.get(name) for name in expected} == expected


def test_an_express_run_that_succeeds_logs_no_error_and_no_cause(
    store: DynamoRunStore[Visit], capsys: pytest.CaptureFixture[str]
) -> None:
    _visit(store)
    express = Ending(ExecutionEnd(arn="arn:x:v-1-r1", status="SUCCEEDED", started=1.0, stopped=2.0))
    assert _starter(store, Workflow(), express).start_once(RunMessage("v-1", 1, "key-1")) == "arn:x:v-1-r1"
    ended = _decision(capsys, "ExecutionEnded")
    assert (ended["status"], ended.get("error"), ended.get("cause")) == ("SUCCEEDED", None, None)


@pytest.mark.parametrize(("execution_arn", "answer"), [("arn:x:v-1-r1", "arn:x:v-1-r1"), (None, "v-1-r1")])
def test_a_finished_entity_on_express_is_a_duplicate_answered_with_its_execution(
    store: DynamoRunStore[Visit],
    ddb: Any,
    capsys: pytest.CaptureFixture[str],
    execution_arn: str | None,
    answer: str,
) -> None:
    # Given a visit whose run 1 COMPLETED (its ARN recorded, or not: its steps were run by hand)
    _visit(store)
    if execution_arn is not None:
        store.record_execution("v-1", run=1, execution_arn=execution_arn)
    _set_status(store, ddb, RunStatus.COMPLETED)
    express = Ending(ExecutionEnd(arn="arn:x:other", status="SUCCEEDED", started=1.0, stopped=2.0))
    # When its message comes again, nothing runs: the answer is its execution, or the run's name
    assert _starter(store, Workflow(), express).start_once(RunMessage("v-1", 1, "key-1")) == answer
    assert express.runs == []
    # And the duplicate is one line, with the entity's status
    hit = _decision(capsys, "DedupHit")
    assert (hit["token"], hit["step"], hit["status"], hit["entity_id"], hit["run"]) == (
        "dev.v-1.r1",
        "worker",
        "COMPLETED",
        "v-1",
        1,
    )


def test_an_express_run_that_fails_is_retried_by_the_queue(store: DynamoRunStore[Visit]) -> None:
    _visit(store)
    express = Express("FAILED")
    with pytest.raises(ExecutionFailed, match="execution FAILED: Boom"):
        _starter(store, Workflow(), express).start_once(RunMessage("v-1", 1, "key-1"))
    stored = store.get("v-1")
    assert stored is not None
    assert (stored.status, stored.execution_arn, express.runs) == (
        RunStatus.RUNNING,
        "arn:x:v-1-r1",
        ["v-1-r1"],
    )


# --- the operator's next run and the sweep ------------------------------------------------------


def test_a_next_run_follows_only_a_failed_run_and_sends_its_message(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    _visit(store)
    queue = Queue()
    reruns = Reruns(entity=VISIT, store=store, queue=queue)
    _set_status(store, ddb, RunStatus.RUNNING)
    with pytest.raises(RerunRefused, match="visit v-1 is RUNNING on run 1"):
        reruns.start_next_run("v-1")
    _set_status(store, ddb, RunStatus.FAILED)
    assert reruns.start_next_run("v-1").run == 2
    assert reruns.start_next_run("v-1").run == 2  # asked again: the message only
    assert queue.sent == [{"visit_id": "v-1", "run": 2, "idempotency_key": "key-1"}] * 2
    with pytest.raises(EntityNotFound, match="no visit 'v-9'"):
        reruns.start_next_run("v-9")


def test_the_message_of_a_run_already_consumed_is_never_resent(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    _visit(store)
    _set_status(store, ddb, RunStatus.RUNNING)
    found = store.get("v-1")
    assert found is not None
    queue = Queue()
    with pytest.raises(RerunRefused) as refused:
        Reruns(entity=VISIT, store=store, queue=queue).resend(found)
    assert str(refused.value) == "visit v-1 is RUNNING: its message was consumed"
    assert queue.sent == []


def test_the_sweep_resends_only_entities_accepted_before_the_bound(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    _visit(store, "v-1", created_at="2026-01-01T00:00:00+00:00")
    _visit(store, "v-2", created_at="2026-01-01T00:09:00+00:00")
    queue = Queue()
    reruns = Reruns(entity=VISIT, store=store, queue=queue)
    now = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    resent = reruns.resend_stranded(now=now, bound_seconds=300)
    assert [visit.visit_id for visit in resent] == ["v-1"]
    assert queue.sent == [{"visit_id": "v-1", "run": 1, "idempotency_key": "key-1"}]
    _set_status(store, ddb, RunStatus.RUNNING)
    assert reruns.resend_stranded(now=now, bound_seconds=300) == []


# --- the run view: any service's entities by their run attributes -----------------------------


def test_the_run_view_reads_a_services_entity_without_its_codec(
    store: DynamoRunStore[Visit], ddb: Any
) -> None:
    visit = _visit(store)
    _set_status(store, ddb, RunStatus.FAILED)
    view = run_records(client=ddb, table_name=TABLE, entity=VISIT)
    assert view.get("v-1") == RunRecord(
        entity_id="v-1",
        idempotency_key=visit.idempotency_key,
        created_at=visit.created_at,
        run=1,
        status="FAILED",
    )
    assert view.get("v-9") is None


def test_the_run_view_moves_a_run_as_the_services_store_does(store: DynamoRunStore[Visit], ddb: Any) -> None:
    # Given a visit whose run 1 ended FAILED, rerun through the view (an operator's tool)
    _visit(store)
    _set_status(store, ddb, RunStatus.FAILED)
    queue = Queue()
    reruns = Reruns(entity=VISIT, store=run_records(client=ddb, table_name=TABLE, entity=VISIT), queue=queue)
    next_run = reruns.start_next_run("v-1")
    # Then run 2 is ACCEPTED, its message names the visit under its own field, and the service
    # reads its whole record, terms and all, on run 2
    assert (next_run.run, next_run.status) == (2, "ACCEPTED")
    assert queue.sent == [{"visit_id": "v-1", "run": 2, "idempotency_key": "key-1"}]
    stored = store.get("v-1")
    assert stored is not None
    assert (stored.seats, stored.run, stored.status) == (2, 2, RunStatus.ACCEPTED)


def test_the_run_view_never_creates_an_entity(ddb: Any, store: DynamoRunStore[Visit]) -> None:
    view = run_records(client=ddb, table_name=TABLE, entity=VISIT)
    record = RunRecord(
        entity_id="v-1", idempotency_key="k", created_at="2026-01-01T00:00:00+00:00", run=1, status="ACCEPTED"
    )
    with pytest.raises(TypeError, match="a run view never creates visit 'v-1'"):
        view.create(record)
    assert store.get("v-1") is None


def test_an_execution_name_gives_back_its_entity_and_run() -> None:
    from reliability.workflow_runs import execution_name, run_of_execution  # noqa: PLC0415

    name = execution_name("tr-0123abcd", 3)
    assert run_of_execution(name) == ("tr-0123abcd", 3)
    # a restart of the run appends after a dash; the run is still the one the name began with
    assert run_of_execution(f"{name}-restart-2") == ("tr-0123abcd", 3)
    assert run_of_execution(f"{name}-again-7") == ("tr-0123abcd", 3)
    with pytest.raises(ValueError, match="not an execution name"):
        run_of_execution("no-run-here")
