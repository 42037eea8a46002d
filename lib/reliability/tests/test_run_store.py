"""The run store on DynamoDB (`DynamoRunStore`): the write that ends a run, the reads a worker and
the sweep rely on (strongly consistent, every page), and its calls' transient failures, each named
for the call."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from reliability.declaration import Entity
from reliability.errors import RerunRefused, TransientError
from reliability.run_store import DynamoRunStore, RunRecord, record_key, run_records
from reliability_helpers import REGION, lose_answer

VISIT = Entity(name="visit", id_prefix="v-", table="visits")
TABLE = "retrysafe-test-visits"
Record = dict[str, Any]


def _store(client: Any) -> DynamoRunStore[Record]:
    return DynamoRunStore(client=client, table_name=TABLE, entity=VISIT, encode=dict, decode=dict)


@pytest.fixture
def store(ddb: Any) -> DynamoRunStore[Record]:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return _store(ddb)


def _visit(visit_id: str, created_at: str = "2026-01-01T00:00:00+00:00", status: str = "ACCEPTED") -> Record:
    return {
        "visit_id": visit_id,
        "idempotency_key": f"key-{visit_id}",
        "created_at": created_at,
        "run": 1,
        "status": status,
    }


def _requests(client: Any, operation: str, **added: Any) -> list[dict[str, Any]]:
    """Every request of `operation` the client sends (moto answers it), with `added` parameters
    set on each (a page size, say)."""
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> dict[str, Any]:
        params = {**params, **added}
        sent.append(params)
        return params

    client.meta.events.register(f"provide-client-params.dynamodb.{operation}", record)
    return sent


# --- the write that ends a run ----------------------------------------------------------------


def test_the_status_write_sets_the_status_and_the_time_the_run_finished(
    store: DynamoRunStore[Record], ddb: Any
) -> None:
    store.create(_visit("v-1"))
    before = datetime.now(UTC)
    write = store.status_write("v-1", "COMPLETED")
    after = datetime.now(UTC)

    finished_at = write.entry["Update"]["ExpressionAttributeValues"][":at"]["S"]
    assert before <= datetime.fromisoformat(finished_at) <= after
    assert write.entry == {
        "Update": {
            "TableName": TABLE,
            "Key": {"pk": {"S": "visit#v-1"}, "sk": {"S": "visit"}},
            "UpdateExpression": "SET #s = :status, finished_at = :at",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":status": {"S": "COMPLETED"}, ":at": {"S": finished_at}},
        }
    }
    assert (write.on_condition_failed, write.optional, write.carries_record) == (None, False, False)

    ddb.transact_write_items(TransactItems=[write.entry])

    stored = store.get("v-1")
    assert stored is not None
    assert (stored["status"], stored["finished_at"], stored["run"]) == ("COMPLETED", finished_at, 1)


def test_the_status_write_never_creates_an_entity(store: DynamoRunStore[Record], ddb: Any) -> None:
    with pytest.raises(ClientError) as cancelled:
        ddb.transact_write_items(TransactItems=[store.status_write("v-9", "FAILED").entry])
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert store.get("v-9") is None


# --- the reads ----------------------------------------------------------------------------------


def test_an_entity_is_read_strongly_consistent_at_its_key(store: DynamoRunStore[Record], ddb: Any) -> None:
    store.create(_visit("v-1"))
    sent = _requests(ddb, "GetItem")
    assert store.get("v-1") == {"pk": "visit#v-1", "sk": "visit", **_visit("v-1")}
    assert sent == [{"TableName": TABLE, "Key": record_key(VISIT, "v-1"), "ConsistentRead": True}]


def test_the_sweep_reads_every_page_strongly_consistent(store: DynamoRunStore[Record], ddb: Any) -> None:
    # Given five visits, four of them ACCEPTED before the bound, read one item per page
    for number in range(1, 5):
        store.create(_visit(f"v-{number}"))
    store.create(_visit("v-5", status="RUNNING"))
    store.create(_visit("v-6", created_at="2026-01-02T00:00:00+00:00"))
    in_scan_order = [item["pk"]["S"] for item in ddb.scan(TableName=TABLE)["Items"]]
    sent = _requests(ddb, "Scan", Limit=1)

    found = store.accepted_before("2026-01-01T12:00:00+00:00")

    # Then every page was read, each after the last one's end, all strongly consistent
    assert sorted(record["visit_id"] for record in found) == ["v-1", "v-2", "v-3", "v-4"]
    assert len(sent) >= len(in_scan_order)  # one item a page (and maybe a last, empty page)
    assert all(request["ConsistentRead"] is True for request in sent)
    assert "ExclusiveStartKey" not in sent[0]
    assert [request["ExclusiveStartKey"]["pk"]["S"] for request in sent[1:]] == in_scan_order[: len(sent) - 1]


# --- transient failures, each named for its call --------------------------------------------------

CALLS: dict[str, tuple[str, Callable[[DynamoRunStore[Record]], object]]] = {
    "create visit": ("put_item", lambda store: store.create(_visit("v-1"))),
    "get visit": ("get_item", lambda store: store.get("v-1")),
    "scan accepted visits": ("scan", lambda store: store.accepted_before("2026-01-01T00:00:00+00:00")),
    "mark running": ("update_item", lambda store: store.mark_running("v-1", run=1, execution_arn="arn:1")),
    "record execution arn": (
        "update_item",
        lambda store: store.record_execution("v-1", run=1, execution_arn="arn:1"),
    ),
    "start next run": ("update_item", lambda store: store.start_next_run("v-1", run=1)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_throttled_call_is_a_transient_error_naming_the_call(call: str) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    operation, act = CALLS[call]
    with Stubber(client) as stubber:
        stubber.add_client_error(operation, "ProvisionedThroughputExceededException")
        with pytest.raises(TransientError) as throttled:
            act(_store(client))
    assert str(throttled.value) == f"{call}: ProvisionedThroughputExceededException"


# --- the runs' transitions --------------------------------------------------------------------


def _failed(store: DynamoRunStore[Record], visit_id: str = "v-1", **values: Any) -> None:
    """A visit whose run ended FAILED, its execution and end recorded (`values` set over that)."""
    store.create(
        {**_visit(visit_id), "status": "FAILED", "execution_arn": "arn:r1", "finished_at": "t1", **values}
    )


def test_the_next_run_is_accepted_without_the_last_runs_execution_and_end(
    store: DynamoRunStore[Record], ddb: Any
) -> None:
    _failed(store)
    answered = store.start_next_run("v-1", run=1)
    stored = store.get("v-1")
    assert stored is not None
    assert (stored["run"], stored["status"]) == (2, "ACCEPTED")
    assert "execution_arn" not in stored
    assert "finished_at" not in stored
    assert {name: answered[name] for name in ("run", "status", "accepted_at")} == {
        name: stored[name] for name in ("run", "status", "accepted_at")
    }


def test_a_next_run_whose_answer_was_lost_answers_the_entity_it_wrote(
    store: DynamoRunStore[Record], ddb: Any
) -> None:
    # Given the transition's first attempt lands but its answer is lost, so the SDK sends it again
    _failed(store)
    attempts = lose_answer(ddb, "UpdateItem")
    # Then the resend, refused by the landed write, is recognised as this call's own
    answered = store.start_next_run("v-1", run=1)
    assert len(attempts) == 2
    assert (answered["run"], answered["status"]) == (2, "ACCEPTED")


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        (
            {"status": "RUNNING", "run": 3},
            "visit v-1 is RUNNING on run 3; run 4 may start only after run 3 ended FAILED",
        ),
        (
            {"status": "COMPLETED"},
            "visit v-1 is COMPLETED on run 1; run 2 may start only after run 1 ended FAILED",
        ),
    ],
)
def test_a_next_run_after_a_run_that_did_not_fail_is_refused(
    store: DynamoRunStore[Record], ddb: Any, values: dict[str, Any], refusal: str
) -> None:
    _failed(store, **values)
    run = values.get("run", 1)
    with pytest.raises(RerunRefused) as refused:
        store.start_next_run("v-1", run=run)
    assert str(refused.value) == refusal


def test_a_next_run_of_an_entity_stored_before_runs_were_counted_reads_it_as_run_1(
    store: DynamoRunStore[Record], ddb: Any
) -> None:
    # Given a visit stored without a run attribute (before the run model counted runs)
    store.create({key: value for key, value in _visit("v-1").items() if key != "run"} | {"status": "RUNNING"})
    with pytest.raises(RerunRefused) as refused:
        store.start_next_run("v-1", run=1)
    assert (
        str(refused.value) == "visit v-1 is RUNNING on run 1; run 2 may start only after run 1 ended FAILED"
    )
    # And the run view reads it as run 1
    assert run_records(client=ddb, table_name=TABLE, entity=VISIT).get("v-1") == RunRecord(
        entity_id="v-1",
        idempotency_key="key-v-1",
        created_at="2026-01-01T00:00:00+00:00",
        run=1,
        status="RUNNING",
    )


def test_a_next_run_of_no_entity_is_refused_naming_it(store: DynamoRunStore[Record]) -> None:
    with pytest.raises(RerunRefused) as refused:
        store.start_next_run("v-9", run=1)
    assert str(refused.value) == "no visit 'v-9'"
    assert store.get("v-9") is None


def test_an_execution_of_a_run_no_longer_current_is_not_recorded(
    store: DynamoRunStore[Record], ddb: Any
) -> None:
    # Given a visit on run 2, the late ARN of run 1's execution changes nothing
    _failed(store, run=2, status="RUNNING", execution_arn="arn:r2")
    store.record_execution("v-1", run=1, execution_arn="arn:r1-late")
    stored = store.get("v-1")
    assert stored is not None
    assert stored["execution_arn"] == "arn:r2"
    # while the current run's is
    store.record_execution("v-1", run=2, execution_arn="arn:r2-restart")
    assert (store.get("v-1") or {})["execution_arn"] == "arn:r2-restart"


def test_recording_an_execution_on_a_missing_table_propagates_the_refusal(ddb: Any) -> None:
    with pytest.raises(ClientError) as refused:
        _store(ddb).record_execution("v-1", run=1, execution_arn="arn:1")
    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_the_run_view_reads_the_runs_execution(store: DynamoRunStore[Record], ddb: Any) -> None:
    _failed(store, run=2)
    assert run_records(client=ddb, table_name=TABLE, entity=VISIT).get("v-1") == RunRecord(
        entity_id="v-1",
        idempotency_key="key-v-1",
        created_at="2026-01-01T00:00:00+00:00",
        run=2,
        status="FAILED",
        execution_arn="arn:r1",
    )
