"""What keeps the local cloud fast under load: a listen backlog for bursts of clients, moto's
DynamoDB hot paths (TransactWriteItems, Query) costing the same on a full table as on an empty one,
and moto's per-request work done once (patches_speed)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import backends as moto_backends
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from emulator import patches_speed
from emulator.apigw_template import apis_from_template
from emulator.config import ACCOUNT_ID, CONCURRENT_CALLS
from localcloud import patches
from localcloud.apigw import RestApiHandler
from localcloud.apigw_server import RestApiServer
from localcloud.lambdas import LambdaRuntime
from localcloud.server import MotoEndpoint

CLIENTS = CONCURRENT_CALLS


def _burst(port: int, request: bytes) -> tuple[Counter[str], Counter[str]]:
    """CLIENTS connections opened at the same moment, one request each: (status lines, failures)."""
    answers: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def client() -> None:
        try:
            barrier.wait(10)
            with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
                connection.sendall(request)
                reply = connection.makefile("rb").readline()
            if not reply:
                raise ConnectionResetError("closed without an answer")
            with lock:
                answers[reply.split(b" ")[1].decode()] += 1
        except (OSError, threading.BrokenBarrierError) as exc:
            with lock:
                failures[type(exc).__name__] += 1

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return answers, failures


def _slow_lambda(_function: str, _event: dict[str, Any]) -> tuple[Any, str | None]:
    time.sleep(0.2)  # every request holds its thread a while, as a real call does
    return {"statusCode": 202, "body": "{}"}, None


def test_the_rest_api_takes_64_clients_at_once_without_a_reset(assembly: Path):
    # Given the REST API served on a port, each call taking 200 ms
    template = json.loads((assembly / "fx-local-app.template.json").read_text())
    (spec,) = apis_from_template(
        template,
        physical_ids={logical: f"id-{logical[:6].lower()}" for logical in template["Resources"]},
        function_names={"ApiFunction": "fn-api"},
    )
    server = RestApiServer(
        RestApiHandler(spec, invoke=_slow_lambda, account_id="123456789012", region="us-east-1"), port=0
    )
    server.start()
    try:
        # When 64 clients connect and send a request at the same moment
        answers, failures = _burst(
            server.port,
            b"POST /local/orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        )
    finally:
        server.stop()
    # Then every one gets an answer (the edge's validation answers; none is dropped or reset)
    assert not failures
    assert sum(answers.values()) == CLIENTS


def test_the_aws_endpoint_takes_64_clients_at_once_without_a_reset():
    def control(_method: str, _path: str, _body: bytes) -> tuple[int, dict[str, Any]]:
        time.sleep(0.2)
        return 200, {}

    endpoint = MotoEndpoint(0, control=control)
    endpoint.start()
    try:
        answers, failures = _burst(
            endpoint.port, b"GET /_localcloud/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
    finally:
        endpoint.stop()
    assert not failures
    assert answers == {"200": CLIENTS}


# -- moto's DynamoDB hot paths ----------------------------------------------------------------


@pytest.fixture
def dynamodb(tmp_path: Path) -> Iterator[Any]:
    """An in-process moto DynamoDB with the local cloud's patches, and an orders-shaped table."""
    runtime = LambdaRuntime(state_dir=tmp_path, endpoint="http://127.0.0.1:9")
    with mock_aws():
        patches.install(runtime)
        try:
            client = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(
                TableName="t",
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
            yield client
        finally:
            patches.uninstall()
            runtime.close()


def _fill(items: int) -> None:
    """Items straight into moto's table (thousands of PutItem calls would take seconds)."""
    table = dynamodb_backends[ACCOUNT_ID]["us-east-1"].get_table("t")
    for n in range(items):
        table.put_item({"pk": {"S": f"order#{n // 4}"}, "sk": {"S": f"step#{n % 4}"}, "v": {"S": "x" * 100}})


def _transaction(order: str, *, expect: str) -> list[dict[str, Any]]:
    """A fence-like transaction: put one item, update another under a condition."""
    return [
        {"Put": {"TableName": "t", "Item": {"pk": {"S": order}, "sk": {"S": "fence"}, "n": {"N": "1"}}}},
        {
            "Update": {
                "TableName": "t",
                "Key": {"pk": {"S": order}, "sk": {"S": "step#0"}},
                "UpdateExpression": "SET st = :new",
                "ConditionExpression": "attribute_not_exists(st) OR st = :expect",
                "ExpressionAttributeValues": {":new": {"S": "RESERVED"}, ":expect": {"S": expect}},
            }
        },
    ]


@pytest.fixture
def item_copies(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts moto's item deep copies (a whole-table copy deep-copies every item)."""
    counts: Counter[str] = Counter()
    original = Item.__deepcopy__

    def counting(self: Item, memo: dict[int, Any]) -> Item:
        counts["items"] += 1
        return original(self, memo)

    monkeypatch.setattr(Item, "__deepcopy__", counting)
    return counts


def test_a_transaction_copies_only_the_items_it_touches(dynamodb, item_copies):
    # Given a table of 2,000 items
    _fill(2000)
    item_copies.clear()
    # When a transaction writes two of them
    dynamodb.transact_write_items(TransactItems=_transaction("order#7", expect="NONE"))
    # Then moto copied those two (to roll back), not the table
    assert item_copies["items"] <= 2
    stored = dynamodb.get_item(TableName="t", Key={"pk": {"S": "order#7"}, "sk": {"S": "step#0"}})["Item"]
    assert stored["st"] == {"S": "RESERVED"}


def test_a_cancelled_transaction_leaves_every_item_as_it_was(dynamodb):
    # Given a partition, and a transaction whose put lands before its update's condition fails
    _fill(8)
    before = dynamodb.scan(TableName="t")["Items"]
    failing = _transaction("order#1", expect="NONE")
    failing[1]["Update"]["ConditionExpression"] = "st = :expect"  # st does not exist: refused
    # When it runs
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=[failing[0], failing[1]])
    # Then the put is undone and nothing else changed
    assert dynamodb.scan(TableName="t")["Items"] == before
    # And an update in place that a later entry cancels is undone too
    dynamodb.transact_write_items(TransactItems=_transaction("order#1", expect="NONE"))
    committed = dynamodb.scan(TableName="t")["Items"]
    update_then_fail = [
        {
            "Update": {
                "TableName": "t",
                "Key": {"pk": {"S": "order#1"}, "sk": {"S": "step#1"}},
                "UpdateExpression": "SET st = :s",
                "ExpressionAttributeValues": {":s": {"S": "CHANGED"}},
            }
        },
        {
            "ConditionCheck": {
                "TableName": "t",
                "Key": {"pk": {"S": "order#1"}, "sk": {"S": "fence"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=update_then_fail)
    assert dynamodb.scan(TableName="t")["Items"] == committed


@pytest.fixture
def key_comparisons(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts moto's key comparisons (listing the whole table compares every item's key)."""
    counts: Counter[str] = Counter()
    original = DynamoType.__eq__

    def counting(self: DynamoType, other: Any) -> bool:
        counts["eq"] += 1
        return original(self, other)

    monkeypatch.setattr(DynamoType, "__eq__", counting)
    return counts


def test_a_query_reads_its_partition_not_the_table(dynamodb, key_comparisons):
    # Given a table of 2,000 items in 500 partitions
    _fill(2000)
    key_comparisons.clear()
    # When one partition is queried
    found = dynamodb.query(
        TableName="t",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "order#42"}},
        ConsistentRead=True,
    )["Items"]
    # Then it has that partition's items, and moto compared keys of about that many items
    assert [item["sk"]["S"] for item in found] == ["step#0", "step#1", "step#2", "step#3"]
    assert key_comparisons["eq"] < 100


def test_a_partition_query_pages_sorts_and_filters_as_moto_does(dynamodb):
    _fill(40)

    def query(**kwargs: Any) -> dict[str, Any]:
        return dynamodb.query(
            TableName="t",
            KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
            ExpressionAttributeValues={":pk": {"S": "order#3"}, ":p": {"S": "step#"}},
            **kwargs,
        )

    first = query(Limit=3, ScanIndexForward=False)
    rest = query(Limit=3, ScanIndexForward=False, ExclusiveStartKey=first["LastEvaluatedKey"])
    sks = [item["sk"]["S"] for item in first["Items"] + rest["Items"]]
    assert sks == ["step#3", "step#2", "step#1", "step#0"]
    assert query(Select="COUNT")["Count"] == 4
    missing = dynamodb.query(
        TableName="t",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "order#none"}},
    )
    assert missing["Items"] == []


# -- work moto repeats at every request (patches_speed) -----------------------------------------


def test_the_speed_patches_are_on_while_installed_and_moto_is_itself_again_after(tmp_path: Path):
    def defined() -> list[Any]:
        return [vars(owner).get(name) for owner, name, _ in patches_speed.replacements()]

    before = defined()
    runtime = LambdaRuntime(state_dir=tmp_path, endpoint="http://127.0.0.1:9")
    patches.install(runtime)
    try:
        # A state machine's definition is parsed once, however many executions start
        definition = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}})
        first, _ = AmazonStateLanguageParser.parse(definition)
        again, _ = AmazonStateLanguageParser.parse(definition)
        assert again is first
        assert defined() != before
    finally:
        patches.uninstall()
        runtime.close()
    assert defined() == before
    parse = AmazonStateLanguageParser.parse
    assert parse(definition)[0] is not parse(definition)[0]


def test_a_host_is_matched_to_its_service_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # moto lists its own package directory and tries every URL pattern at each request (patch 20)
    listings = Counter[str]()
    list_modules = moto_backends.list_of_moto_modules

    def counted() -> Any:
        listings["list"] += 1
        return list_modules()

    monkeypatch.setattr(moto_backends, "list_of_moto_modules", counted)
    host = "sqs.eu-west-3.amazonaws.com"  # a host no other test looks up
    moto_answer = DomainDispatcherApplication(create_backend_app).get_backend_for_host(host)
    runtime = LambdaRuntime(state_dir=tmp_path, endpoint="http://127.0.0.1:9")
    patches.install(runtime)
    try:
        dispatcher = DomainDispatcherApplication(create_backend_app)
        listings.clear()
        answers = [dispatcher.get_backend_for_host(host) for _ in range(3)]
    finally:
        patches.uninstall()
        runtime.close()

    assert answers == [moto_answer] * 3 == ["sqs"] * 3
    assert listings["list"] == 1


def test_lambda_tasks_share_one_client_per_region_and_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # moto builds a boto3 client at every Step Functions Lambda task (patch 21)
    runtime = LambdaRuntime(state_dir=tmp_path, endpoint="http://127.0.0.1:9")
    patches.install(runtime)
    try:
        monkeypatch.setenv("MOTO_PORT", "4599")
        first = lambda_eval_utils.boto_client_for(region="us-east-1", service="lambda")
        again = lambda_eval_utils.boto_client_for("us-east-1", "lambda", state_credentials=None)
        other_region = lambda_eval_utils.boto_client_for(region="eu-west-1", service="lambda")
        monkeypatch.setenv("MOTO_PORT", "4601")  # a later local cloud in the same process
        other_port = lambda_eval_utils.boto_client_for(region="us-east-1", service="lambda")
    finally:
        patches.uninstall()
        runtime.close()

    assert again is first
    assert other_region is not first
    assert other_region.meta.region_name == "eu-west-1"
    assert first.meta.endpoint_url == "http://localhost:4599"
    assert other_port.meta.endpoint_url == "http://localhost:4601"
    # moto's settings (no retries), with a connection per concurrent caller
    assert first.meta.config.retries["total_max_attempts"] == 1
    assert first.meta.config.max_pool_connections == CONCURRENT_CALLS
    assert lambda_eval_utils.boto_client_for(region="us-east-1", service="lambda") is not first
