"""The tools that move an entity's runs (`ops.rerun`, `ops.redrive`'s Express restart) work on any
service's declaration: its entity's table and queue by their stack outputs, its record read by the
run attributes alone (its terms untouched), its message naming it under its own id field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from two_step_service import SERVICE  # a visit service: entity `visit`, table and queue `visits`

from ops import redrive, rerun
from ops.target import Target
from reliability.run_store import run_records
from reliability.sqs import SqsQueue

REGION = "us-east-1"
TABLE = "visits-physical"
CREATED = "2026-01-01T00:00:00+00:00"


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, str]]:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        ddb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="visits")["QueueUrl"]
        outputs = {"VisitsTableName": TABLE, "VisitsQueueUrl": url}
        target = Target(endpoint_url=None, region=REGION, outputs=outputs)
        monkeypatch.setattr(Target, "resolve", classmethod(lambda cls, **_: target))
        yield ddb, sqs, url


def _visit(ddb: Any, status: str) -> None:
    """A visit as its own service stores it: its terms (`seats`) beside the run attributes."""
    ddb.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": "visit#v-1"},
            "sk": {"S": "visit"},
            "visit_id": {"S": "v-1"},
            "seats": {"N": "2"},
            "idempotency_key": {"S": "key-1"},
            "created_at": {"S": CREATED},
            "run": {"N": "1"},
            "status": {"S": status},
        },
    )


def _sent(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def test_a_rerun_of_another_services_entity_starts_its_next_run(
    cloud: tuple[Any, Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ddb, sqs, url = cloud
    # Refused while run 1 runs, naming the entity as its service does
    _visit(ddb, "RUNNING")
    assert rerun.main(["v-1"], declared=SERVICE) == 1
    assert "visit v-1 is RUNNING on run 1" in capsys.readouterr().err
    # Once run 1 ended FAILED: run 2, ACCEPTED, its message under the entity's own id field
    _visit(ddb, "FAILED")
    assert rerun.main(["v-1"], declared=SERVICE) == 0
    assert json.loads(capsys.readouterr().out) == {"visit_id": "v-1", "run": 2, "status": "ACCEPTED"}
    assert _sent(sqs, url) == [{"visit_id": "v-1", "run": 2, "idempotency_key": "key-1"}]
    # And the visit's terms are as its service wrote them
    item = ddb.get_item(TableName=TABLE, Key={"pk": {"S": "visit#v-1"}, "sk": {"S": "visit"}})["Item"]
    assert (item["seats"], item["run"], item["status"]) == ({"N": "2"}, {"N": "2"}, {"S": "ACCEPTED"})
    assert rerun.main(["v-9"], declared=SERVICE) == 1
    assert "no visit 'v-9'" in capsys.readouterr().err


def test_an_express_restart_of_another_services_entity_sends_its_current_run_again(
    cloud: tuple[Any, Any, str],
) -> None:
    ddb, sqs, url = cloud
    store = run_records(client=ddb, table_name=TABLE, entity=SERVICE.entity)
    queue = SqsQueue(client=sqs, queue_url=url)
    soon = datetime.fromisoformat(CREATED).timestamp() + 60
    _visit(ddb, "RUNNING")
    restarted = redrive.restart_express_run(
        store=store, queue=queue, entity_id="v-1", now=soon, declared=SERVICE
    )
    assert (restarted.method, restarted.execution_arn) == (redrive.Method.QUEUED_RESTART, "v-1-r1")
    assert _sent(sqs, url) == [{"visit_id": "v-1", "run": 1, "idempotency_key": "key-1"}]
    # A finished visit has nothing to restart
    _visit(ddb, "COMPLETED")
    with pytest.raises(redrive.RedriveError, match="visit v-1 is COMPLETED: nothing to restart"):
        redrive.restart_express_run(store=store, queue=queue, entity_id="v-1", now=soon, declared=SERVICE)
