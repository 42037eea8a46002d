"""Each Lambda entry point (`wallet_api.handlers`) invoked on moto with its sample event
(events/), through the runtime the function would build at its cold start: the API answers a
retried POST the same and enqueues run 1, the worker starts one execution per (transfer,
run), a step runs behind its fence, the consumer applies an event once, the sweep re-sends a
transfer stranded in ACCEPTED."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from reliability.declaration import FENCES, queue_env, table_env
from reliability.settings import IDEMPOTENCY, settings_of

from wallet_api.domain import ENTITY, balance_key
from wallet_api.proof import OPENING_BALANCES, seed
from wallet_api.runtime import RUNTIMES, Runtime
from wallet_api.workflow import SERVICE

from support import NOW, REGION, physical

EVENTS = Path(__file__).resolve().parents[2] / "events"
STAGE = "dev"  # the sample events' stage
ACCOUNT = "123456789012"
STRANDED_AFTER_SECONDS = 60
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class Context:
    """What a Lambda invocation's context gives the handlers."""

    function_name: str = "wallet-api-test-function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:wallet-api"
    aws_request_id: str = "request-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@dataclass
class Cloud:
    dynamodb: Any
    sqs: Any
    stepfunctions: Any
    queues: dict[str, str]
    state_machine_arn: str

    def environ(self, **variables: str) -> dict[str, str]:
        """Every variable a function of any kind is given (each kind reads its own)."""
        tables = (*SERVICE.tables, FENCES, IDEMPOTENCY)
        return {
            "SERVICE_NAME": SERVICE.name,
            "STAGE": STAGE,
            "AWS_LAMBDA_FUNCTION_NAME": Context.function_name,
            "IDEMPOTENCY_TTL_SECONDS": "3600",
            "FENCE_TTL_SECONDS": "3600",
            "DEDUP_TTL_SECONDS": "86400",
            "PROVIDER_KEY_LIFETIME_SECONDS": "86400",
            "STATE_MACHINE_ARN": self.state_machine_arn,
            "THROTTLE_BACKOFF_SECONDS": "1,2",
            "WORKFLOW_TYPE": "STANDARD",
            "MAX_RECEIVE_COUNT": "3",
            "STRANDED_AFTER_SECONDS": str(STRANDED_AFTER_SECONDS),
            **{table_env(table): physical(table) for table in tables},
            **{queue_env(queue): url for queue, url in self.queues.items()},
            **variables,
        }

    def messages(self, queue: str) -> list[dict[str, Any]]:
        """Receive (and delete) what is on `queue` now."""
        url = self.queues[queue]
        answer = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        found = answer.get("Messages", [])
        for message in found:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return [json.loads(message["Body"]) for message in found]


@pytest.fixture
def cloud(dynamodb: Any) -> Cloud:
    sqs = boto3.client("sqs", region_name=REGION)
    names = [SERVICE.queue, *(consumer.name for consumer in SERVICE.consumers)]
    queues = {
        queue: sqs.create_queue(QueueName=physical(queue))["QueueUrl"]
        for name in names
        for queue in (name, f"{name}-dlq")
    }
    stepfunctions = boto3.client("stepfunctions", region_name=REGION)
    machine = stepfunctions.create_state_machine(
        name=physical("workflow"),
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/workflow",
    )
    return Cloud(dynamodb, sqs, stepfunctions, queues, machine["stateMachineArn"])


@contextmanager
def function(kind: str, environ: dict[str, str], *, after: timedelta = timedelta()) -> Iterator[Handler]:
    """`<package>.handlers.<kind>.handler` with the runtime its cold start would build from `environ`."""
    path = f"wallet_api.handlers.{kind}.handler"
    settings = settings_of(path).from_env(environ)
    runtime = Runtime(
        settings,
        client_factory=lambda name: boto3.client(name, region_name=REGION),
        clock=(NOW + after).timestamp,
    )
    with RUNTIMES.scoped(runtime):
        yield importlib.import_module(path.rpartition(".")[0]).handler


def _event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


def _sqs_event(queue: str, body: dict[str, Any]) -> dict[str, Any]:
    (record,) = _event("audit.json")["Records"]
    record["body"] = json.dumps(body)
    record["eventSourceARN"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{physical(queue)}"
    return {"Records": [record]}


def _post(cloud: Cloud) -> dict[str, Any]:
    """The sample POST, answered 202; the transfer's run message taken off the queue."""
    with function("api", cloud.environ()) as api:
        answer = api(_event("api-create.json"), Context())
    assert answer["statusCode"] == 202, answer
    (message,) = cloud.messages(SERVICE.queue)
    return message


def test_a_post_sent_twice_with_one_key_is_answered_the_same_and_enqueued_once(cloud: Cloud) -> None:
    with function("api", cloud.environ()) as api:
        first = api(_event("api-create.json"), Context())
        second = api(_event("api-create.json"), Context())

    assert first["statusCode"] == second["statusCode"] == 202
    assert json.loads(first["body"]) == json.loads(second["body"])
    entity_id = json.loads(first["body"])[ENTITY.id_field]
    (message,) = cloud.messages(SERVICE.queue)
    assert (message[ENTITY.id_field], message["run"]) == (entity_id, 1)


def test_a_get_reads_the_transfer_back_and_an_unknown_one_is_a_404(cloud: Cloud) -> None:
    entity_id = _post(cloud)[ENTITY.id_field]
    known = _event("api-get.json")
    known["path"] = known["path"].rpartition("/")[0] + f"/{entity_id}"
    known["pathParameters"] = {ENTITY.id_field: entity_id}

    with function("api", cloud.environ()) as api:
        found = api(known, Context())
        missing = api(_event("api-get.json"), Context())

    assert found["statusCode"] == 200, found
    assert json.loads(found["body"])["status"] == "ACCEPTED"
    assert missing["statusCode"] == 404
    assert json.loads(missing["body"])["error"] == "TransferNotFound"


def test_another_caller_gets_a_404_for_a_transfer_it_did_not_send(cloud: Cloud) -> None:
    entity_id = _post(cloud)[ENTITY.id_field]
    foreign = _event("api-get.json")
    foreign["path"] = foreign["path"].rpartition("/")[0] + f"/{entity_id}"
    foreign["pathParameters"] = {ENTITY.id_field: entity_id}
    foreign["requestContext"]["identity"] = {"userArn": f"arn:aws:iam::{ACCOUNT}:user/someone-else"}

    with function("api", cloud.environ()) as api:
        answer = api(foreign, Context())

    assert answer["statusCode"] == 404, answer
    assert json.loads(answer["body"])["error"] == "TransferNotFound"


@pytest.mark.parametrize(("body", "status"), [("{", 400), ('{"source": "acct-1"}', 422), ("[]", 422)])
def test_a_bad_body_is_a_4xx_in_the_error_shape(cloud: Cloud, body: str, status: int) -> None:
    event = _event("api-create.json") | {"body": body}
    with function("api", cloud.environ()) as api:
        answer = api(event, Context())

    assert answer["statusCode"] == status
    assert set(json.loads(answer["body"])) == {"error", "message"}


def test_the_worker_starts_one_execution_per_transfer_and_run(cloud: Cloud) -> None:
    message = _post(cloud)
    event = _sqs_event(SERVICE.queue, message)

    with function("worker", cloud.environ()) as worker:
        first = worker(event, Context())
        again = worker(event, Context())  # the same message delivered twice

    assert first == again == {"batchItemFailures": []}
    arn = cloud.state_machine_arn
    (execution,) = cloud.stepfunctions.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"] == f"{message[ENTITY.id_field]}-r1"
    described = cloud.stepfunctions.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"])["terms"]["entity_id"] == message[ENTITY.id_field]


def test_a_step_runs_behind_its_fence(cloud: Cloud) -> None:
    seed(cloud.dynamodb, {"balances": physical("balances")})
    terms = _event("step-input.json")["terms"]
    with function("steps", cloud.environ(STEP_NAME="DebitSource")) as step:
        first = step(_event("step-input.json"), Context())
        replay = step(_event("step-input.json"), Context())  # the state machine's retry

    assert first == replay
    balance = cloud.dynamodb.get_item(TableName=physical("balances"), Key=balance_key(terms["source"]))
    assert int(balance["Item"]["balance"]["N"]) == OPENING_BALANCES[terms["source"]] - terms["amount"]
    items = cloud.dynamodb.scan(TableName=physical("balances"))["Items"]
    assert len([item for item in items if item["sk"]["S"] != "balance"]) == 1  # one debit item


def test_the_consumer_applies_an_event_once(cloud: Cloud) -> None:
    # Given the transfer the sample event states a fact of (the sample POST's), so it verifies
    entity_id = _post(cloud)[ENTITY.id_field]
    (record,) = _event("audit.json")["Records"]
    name = SERVICE.consumers[0].name
    event = _sqs_event(name, {**json.loads(record["body"]), "entity_id": entity_id})
    with function("consumers", cloud.environ(CONSUMER_NAME=name)) as consumer:
        first = consumer(event, Context())
        again = consumer(event, Context())  # a redelivery
        unknown = consumer(_event("audit.json"), Context())  # no such transfer here

    assert first == again == unknown == {"batchItemFailures": []}
    # the unverifiable event went to the consumer's DLQ (with its reason), not into its table
    assert cloud.messages(f"{name}-dlq") == [json.loads(record["body"])]
    tables = {table for c in SERVICE.consumers for table in c.tables}
    written = [item for table in tables for item in cloud.dynamodb.scan(TableName=physical(table))["Items"]]
    assert len(written) == 1


def test_the_sweep_resends_a_transfer_stranded_in_accepted(cloud: Cloud) -> None:
    message = _post(cloud)  # its message is lost: nobody starts the run

    with function("sweep", cloud.environ(), after=timedelta(seconds=STRANDED_AFTER_SECONDS + 1)) as sweep:
        swept = sweep({}, Context())

    assert swept == {"resent": [message[ENTITY.id_field]]}
    assert cloud.messages(SERVICE.queue) == [message]
