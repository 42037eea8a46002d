"""HTTP idempotency: the IETF Idempotency-Key contract on Powertools' idempotency utility."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.config import Config
from botocore.stub import Stubber

from reliability.errors import TransientError
from reliability.http import (
    ANONYMOUS,
    REPLAYED_HEADER,
    HttpIdempotency,
    HttpResponse,
    caller_of,
    canonical_payload,
    scoped_key,
)
from reliability.testing.crashpoints import SimulatedCrash
from reliability_helpers import (
    IDEMPOTENCY,
    REGION,
    CallCounter,
    aws_client,
    create_tables,
    lose_answer,
    make_telemetry,
    read_emitted,
)

ROUTE = "POST /orders"
CALLER = "arn:aws:iam::123456789012:user/alice"


@dataclass
class Context:
    remaining_ms: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class Api:
    """A handler's view: one HttpIdempotency and an execute that counts its runs."""

    def __init__(self, client: Any, stage: str = "dev", ttl_seconds: int = 3600) -> None:
        self.http = HttpIdempotency(
            persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=client),
            stage=stage,
            ttl_seconds=ttl_seconds,
            telemetry=make_telemetry(),
            retry_after_seconds=2,
        )
        self.runs = 0

    def create(self) -> HttpResponse:
        self.runs += 1
        return HttpResponse(201, {"order_id": f"o-{self.runs}"}, {"Location": f"/orders/o-{self.runs}"})

    def call(
        self,
        payload: Any = '{"item": "a", "qty": 1}',
        key: str | None = "key-1",
        header: str = "Idempotency-Key",
        route: str = ROUTE,
        execute: Any = None,
        context: Any = None,
        caller: str = CALLER,
    ) -> HttpResponse:
        headers = {} if key is None else {header: key}
        scoped = self.http.checked_key(route=route, caller=caller, headers=headers)
        if isinstance(scoped, HttpResponse):
            return scoped
        return self.http.handle(
            route=route,
            key=scoped,
            payload=payload,
            lambda_context=context or Context(),
            execute=execute or self.create,
        )


@pytest.fixture
def api(ddb: Any) -> Api:
    return Api(ddb)


def records(ddb: Any) -> list[dict[str, Any]]:
    return list(ddb.scan(TableName=IDEMPOTENCY)["Items"])


@pytest.mark.parametrize("key", [None, "", "   ", "k" * 256])
def test_missing_empty_or_overlong_key_is_400_and_nothing_runs(api: Api, key: str | None, ddb: Any) -> None:
    # When a request comes without a usable key
    response = api.call(key=key)
    # Then 400 with a JSON error, and nothing ran or was stored
    assert response.status == 400
    assert response.body["error"].startswith("IdempotencyKey")
    assert api.runs == 0
    assert records(ddb) == []


def test_a_255_character_key_is_accepted(api: Api) -> None:
    assert api.call(key="k" * 255).status == 201


def test_lowercase_header_is_matched(api: Api) -> None:
    # Given a client (or proxy) that lowercases header names
    first = api.call(header="idempotency-key")
    # When it retries with the canonical spelling, Then it is the same key
    second = api.call(header="IDEMPOTENCY-KEY")
    assert first.status == 201
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert api.runs == 1


def test_same_key_same_payload_replays_the_stored_response(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a first request
    first = api.call(payload='{"item": "a", "qty": 1}')
    # When the client retries with the same JSON, differently spaced and ordered
    second = api.call(payload='{ "qty":1,\n "item":"a" }')
    third = api.call(payload={"qty": 1, "item": "a"})
    # Then the stored response comes back with the replay header; execute ran once
    assert api.runs == 1
    assert (first.status, first.body) == (201, {"order_id": "o-1"})
    for replay in (second, third):
        assert replay.status == first.status
        assert replay.body == first.body
        assert replay.headers == {**first.headers, "Idempotent-Replayed": "true"}
    assert "Idempotent-Replayed" not in first.headers
    assert read_emitted(capsys.readouterr().out).metric_names().count("Replayed") == 2


def test_same_key_different_payload_is_422(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    api.call(payload='{"item": "a", "qty": 1}')
    response = api.call(payload='{"item": "a", "qty": 2}')
    assert response.status == 422
    assert response.body["error"] == "IdempotencyKeyReused"
    assert api.runs == 1
    assert "PayloadMismatch" in read_emitted(capsys.readouterr().out).metric_names()


def test_mismatch_on_the_fast_path_is_422_in_one_call(api: Api, ddb: Any) -> None:
    # Given a COMPLETED record
    api.call(payload='{"amount": 100}')
    calls = CallCounter(ddb)
    # When a different payload hits it, Then the conditional put's ALL_OLD item is validated:
    # 422 (not a replay) with no second read
    response = api.call(payload='{"amount": 999}')
    assert response.status == 422
    assert calls.take() == ["PutItem"]


def test_json_string_bodies_are_validated_without_powertools_json(api: Api) -> None:
    # Given an API Gateway body (a JSON string): Powertools issue #8473 broke
    # payload_validation_jmespath="powertools_json(body)"; we parse the body ourselves.
    assert api.call(payload='{"order": {"amount": 1}}').status == 201
    assert api.call(payload=b'{"order":{"amount":1}}').headers.get("Idempotent-Replayed") == "true"
    assert api.call(payload='{"order": {"amount": 2}}').status == 422
    assert api.call(payload="not json", key="raw").status == 201
    assert api.call(payload="not json!", key="raw").status == 422


def test_same_key_while_in_progress_is_409_with_retry_after(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the first request is still running when the retry arrives
    inner: list[HttpResponse] = []

    def slow() -> HttpResponse:
        inner.append(api.call())
        return api.create()

    first = api.call(execute=slow)
    # Then the retry got 409 with Retry-After, and the first completed
    assert inner[0].status == 409
    assert inner[0].headers["Retry-After"] == "2"
    assert first.status == 201
    assert "InProgressConflict" in read_emitted(capsys.readouterr().out).metric_names()


def test_an_exception_stores_nothing_and_propagates_intact(api: Api, ddb: Any) -> None:
    # Given execute fails
    error = RuntimeError("downstream down")

    def failing() -> HttpResponse:
        raise error

    # When the request runs, Then the same exception reaches the handler's error mapping
    with pytest.raises(RuntimeError) as raised:
        api.call(execute=failing)
    assert raised.value is error
    # And nothing is stored, so the client's retry executes
    assert records(ddb) == []
    assert api.call().status == 201


def test_4xx_responses_are_not_stored(api: Api, ddb: Any) -> None:
    def invalid() -> HttpResponse:
        return HttpResponse(400, {"error": "ValidationError", "message": "qty must be positive"})

    assert api.call(execute=invalid).status == 400
    assert records(ddb) == []
    assert api.call().status == 201
    assert api.runs == 1


def test_keys_are_scoped_to_route_and_stage(ddb: Any) -> None:
    # Given one key used on two routes and in two stages
    dev, prod = Api(ddb, "dev"), Api(ddb, "prod")
    dev.call(route="POST /orders")
    dev.call(route="POST /refunds")
    prod.call(route="POST /orders")
    # Then each executed: nothing collided
    assert (dev.runs, prod.runs) == (2, 1)
    assert len(records(ddb)) == 3
    assert dev.http.checked_key(
        route=ROUTE, caller=CALLER, headers={"idempotency-key": "key-1"}
    ) != prod.http.checked_key(route=ROUTE, caller=CALLER, headers={"idempotency-key": "key-1"})


def test_a_dead_invocation_blocks_its_key_no_longer_than_its_remaining_time(api: Api) -> None:
    # Given an invocation with 1.5 s left that dies mid-request (a BaseException: no cleanup); 200 ms
    # was too short on a loaded machine: the retry landed after the lock had expired
    def dies() -> HttpResponse:
        raise SimulatedCrash("mid-request")

    with pytest.raises(SimulatedCrash):
        api.call(execute=dies, context=Context(remaining_ms=1500))
    # When the client retries at once, Then 409
    assert api.call().status == 409
    # And after the invocation's time has run out, the retry executes
    time.sleep(1.6)
    assert api.call().status == 201
    assert api.runs == 1


def test_a_lock_write_the_sdk_retries_after_it_landed_still_holds_the_requests_own_lock(aws: None) -> None:
    # Given the lock's PutItem lands but its answer is lost, and the SDK retries it (standard mode)
    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"mode": "standard"}))
    create_tables(client)
    attempts = lose_answer(client, "PutItem")
    api = Api(client)

    # When the request runs; Then it executes once: the retry found the lock its first attempt took
    first = api.call()
    assert len(attempts) == 2
    assert (first.status, api.runs) == (201, 1)
    # And the key's next request replays it (a request in flight with another token still finds
    # the lock held: test_same_key_while_in_progress_is_409_with_retry_after)
    assert api.call().headers[REPLAYED_HEADER] == "true"
    assert api.runs == 1


def test_store_failures_are_store_unavailable() -> None:
    client = aws_client("dynamodb")
    stub = Stubber(client)
    stub.add_client_error("put_item", service_error_code="ProvisionedThroughputExceededException")
    api = Api(client)
    with stub, pytest.raises(TransientError):
        api.call()
    assert api.runs == 0


def test_a_structured_field_string_key_equals_the_bare_key(api: Api) -> None:
    # Given a client that sends the draft's sf-string form
    first = api.call(key='"8e03978e-40d5-43e8-bc93-6894a57f9324"')
    # When another sends the bare value, Then it is the same key
    second = api.call(key="8e03978e-40d5-43e8-bc93-6894a57f9324")
    assert first.status == 201
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert api.call(key='""').status == 400


def test_an_escaped_sf_string_decodes_to_its_bare_key(api: Api) -> None:
    # Given the sf-string form with the two escapes RFC 8941 allows
    first = api.call(key=r'"a\"b\\c"')
    # When the same characters arrive in another spelling of the string, Then it is the same key
    second = api.call(key=r'  "a\"b\\c"  ')
    assert first.status == 201
    assert second.headers.get("Idempotent-Replayed") == "true"


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("tab\there", "IdempotencyKeyInvalid"),  # a control character
        ("nul\x00", "IdempotencyKeyInvalid"),
        ("caf\u00e9", "IdempotencyKeyInvalid"),  # not ASCII
        ("a,b", "IdempotencyKeyInvalid"),  # how a proxy joins two header lines
        ('a"b', "IdempotencyKeyInvalid"),  # a quote outside the quoted form
        ("a\\b", "IdempotencyKeyInvalid"),
        ('"unterminated', "IdempotencyKeyInvalid"),
        ('"a" "b"', "IdempotencyKeyInvalid"),  # text after the string
        (r'"bad \n escape"', "IdempotencyKeyInvalid"),  # only \" and \\ are escapes
        ('"\u00e9"', "IdempotencyKeyInvalid"),
        ('"' + "k" * 256 + '"', "IdempotencyKeyInvalid"),  # 256 decoded characters
        ('""', "IdempotencyKeyMissing"),
    ],
)
def test_a_key_outside_the_sf_string_contract_is_a_400_and_nothing_runs(
    api: Api, ddb: Any, key: str, code: str
) -> None:
    response = api.call(key=key)
    assert (response.status, response.body["error"]) == (400, code)
    assert api.runs == 0
    assert records(ddb) == []


def test_two_header_lines_with_different_keys_are_a_400(api: Api, ddb: Any) -> None:
    # Given API Gateway's multiValueHeaders of a request that carries the header twice
    def call(values: list[str]) -> HttpResponse:
        key = api.http.checked_key(route=ROUTE, caller=CALLER, headers={"Idempotency-Key": values})
        if isinstance(key, HttpResponse):
            return key
        return api.http.handle(
            route=ROUTE,
            key=key,
            payload="{}",
            lambda_context=Context(),
            execute=api.create,
        )

    # Then two different keys are refused, and the same key twice is that key
    refused = call(["key-a", "key-b"])
    assert (refused.status, refused.body["error"]) == (400, "IdempotencyKeyInvalid")
    assert records(ddb) == []
    assert call(["key-a", '"key-a"']).status == 201
    assert api.runs == 1


def test_a_checked_key_is_the_scoped_key_or_the_400(api: Api) -> None:
    assert api.http.checked_key(route=ROUTE, caller=CALLER, headers={"Idempotency-Key": "ok"}) == scoped_key(
        stage="dev", route=ROUTE, raw_key="ok", caller=CALLER
    )
    missing = api.http.checked_key(route=ROUTE, caller=CALLER, headers={})
    assert isinstance(missing, HttpResponse)
    assert missing.body == {
        "error": "IdempotencyKeyMissing",
        "message": "the Idempotency-Key header is required",
    }


@pytest.mark.parametrize("payload", ["[" * 5_000, '{"n": ' + "9" * 5_000 + "}", "\ud800"])
def test_a_payload_json_cannot_parse_is_hashed_as_text(payload: str) -> None:
    assert canonical_payload(payload) == payload


def test_two_callers_with_one_key_never_meet(api: Api, ddb: Any) -> None:
    # Given caller A's request with key key-1
    first = api.call(payload='{"item": "a"}', caller=CALLER)
    # When caller B sends the same key and body, and then the same key with another body
    bob = "arn:aws:iam::123456789012:user/bob"
    same_body = api.call(payload='{"item": "a"}', caller=bob)
    other_body = api.call(payload='{"item": "b"}', caller=bob)
    # Then B's request executes on its own (A's answer is never replayed to it), and only B's own
    # key, reused with another body, is refused: nothing tells B that A holds key-1
    assert (first.status, same_body.status) == (201, 201)
    assert REPLAYED_HEADER not in same_body.headers
    assert same_body.body != first.body
    assert (other_body.status, other_body.body["error"]) == (422, "IdempotencyKeyReused")
    assert api.runs == 2
    assert len(records(ddb)) == 2


def test_the_stored_key_layout_is_pinned() -> None:
    # A change here moves every stored key: clients' retries across the deploy would not find
    # their records (say so in the change, as the caller scope's did)
    assert scoped_key(stage="dev", route=ROUTE, raw_key="k-1", caller=ANONYMOUS).value == (
        'http#dev#r1#v:{"caller":"anonymous","key":"k-1","route":"POST /orders"}'
    )


@pytest.mark.parametrize(
    ("context", "caller"),
    [
        (None, ANONYMOUS),
        ({"identity": {"userArn": None, "sourceIp": "1.2.3.4"}}, ANONYMOUS),
        ({"identity": {"userArn": "arn:aws:iam::111:user/alice"}}, "arn:aws:iam::111:user/alice"),
        (
            {"identity": {"userArn": "arn:aws:sts::111:assumed-role/orders-client/i-0abc"}},
            "arn:aws:sts::111:assumed-role/orders-client",
        ),
        ({"authorizer": {"claims": {"sub": "u-1"}}, "identity": {"userArn": "x"}}, "sub:u-1"),
        ({"authorizer": {"principalId": "tenant-7"}}, "sub:tenant-7"),
    ],
)
def test_the_caller_is_the_authenticated_identity(context: Any, caller: str) -> None:
    assert caller_of(context) == caller


def test_every_session_of_one_role_is_one_caller() -> None:
    # A retry from a fresh container assumes the role again under another session name
    first = caller_of({"identity": {"userArn": "arn:aws:sts::111:assumed-role/svc/session-1"}})
    again = caller_of({"identity": {"userArn": "arn:aws:sts::111:assumed-role/svc/session-2"}})
    assert first == again


def test_the_record_expires_after_the_configured_ttl_not_powertools_default(ddb: Any) -> None:
    # Given a route whose records live two hours (Powertools' default is one)
    api = Api(ddb, ttl_seconds=7200)
    before = int(time.time())
    # When a request is stored
    assert api.call().status == 201
    # Then its record expires two hours on
    [record] = records(ddb)
    assert before + 7200 <= int(record["expiration"]["N"]) <= int(time.time()) + 7200


def test_a_refused_key_says_why_in_the_answer_and_the_decision(capsys: pytest.CaptureFixture[str]) -> None:
    http = HttpIdempotency(
        persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=object()),
        stage="dev",
        ttl_seconds=3600,
        telemetry=make_telemetry(),
    )
    refused = http.checked_key(route=ROUTE, caller=CALLER, headers={"Idempotency-Key": '"unterminated'})
    assert isinstance(refused, HttpResponse)
    assert refused.body == {
        "error": "IdempotencyKeyInvalid",
        "message": "Idempotency-Key is not a valid structured-field string",
    }
    [line] = read_emitted(capsys.readouterr().out).logs
    assert (line["decision"], line["reason"]) == ("IdempotencyKeyRejected", "not-sf-string")


def test_the_payload_is_fingerprinted_with_sha256(api: Api, ddb: Any) -> None:
    # A deployed table's records keep their hashes: changing the function would turn every
    # in-flight retry into a 422
    assert api.call().status == 201
    [record] = records(ddb)
    assert len(record["validation"]["S"]) == 64  # hex sha256 (Powertools' default, md5: 32)
