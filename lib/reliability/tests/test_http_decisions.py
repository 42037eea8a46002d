"""HTTP idempotency, pinned where a change would go unseen by test_http.py: each rejection's code,
reason and message, the fields of each decision's log line, the record id Powertools is given, and
the edges of the header and caller parsing (reliability.http's module and function docs)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyKeyError

from reliability.http import (
    HttpIdempotency,
    HttpResponse,
    caller_of,
    canonical_payload,
    header_value,
    idempotency_key,
    scoped_key,
)
from reliability.keys import Key
from reliability.telemetry import key_hash
from reliability_helpers import IDEMPOTENCY, make_telemetry, read_emitted

ROUTE = "POST /tickets"
CALLER = "arn:aws:iam::123456789012:user/carol"
# What Powertools' Logger puts on every line; the rest of a line is the decision's own fields
_LOGGER_FIELDS = {"level", "location", "message", "timestamp", "service"}


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class Front:
    """A handler's view of one HttpIdempotency: checked_key, then handle with an execute that counts."""

    def __init__(self, client: Any, **options: Any) -> None:
        self.http = HttpIdempotency(
            persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=client),
            stage="dev",
            ttl_seconds=3600,
            telemetry=make_telemetry(),
            **options,
        )
        self.runs = 0

    def create(self) -> HttpResponse:
        self.runs += 1
        return HttpResponse(201, {"ticket": f"t-{self.runs}"})

    def call(self, headers: Any, payload: Any = '{"seat": 1}', execute: Any = None) -> HttpResponse:
        key = self.http.checked_key(route=ROUTE, caller=CALLER, headers=headers)
        if isinstance(key, HttpResponse):
            return key
        return self.http.handle(
            route=ROUTE, key=key, payload=payload, lambda_context=Context(), execute=execute or self.create
        )


@pytest.fixture
def front(ddb: Any) -> Front:
    return Front(ddb)


def decisions(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """Each decision line, without the fields the Logger puts on every line."""
    lines = read_emitted(capsys.readouterr().out).logs
    return [{k: v for k, v in line.items() if k not in _LOGGER_FIELDS} for line in lines]


def key_of(raw: str) -> str:
    return scoped_key(stage="dev", route=ROUTE, raw_key=raw, caller=CALLER).value


def records(ddb: Any) -> list[dict[str, Any]]:
    return list(ddb.scan(TableName=IDEMPOTENCY)["Items"])


@pytest.mark.parametrize(
    ("headers", "code", "reason", "message"),
    [
        ({}, "IdempotencyKeyMissing", "missing", "the Idempotency-Key header is required"),
        ({"Idempotency-Key": ""}, "IdempotencyKeyMissing", "missing", "the Idempotency-Key header is empty"),
        (
            {"Idempotency-Key": '""'},
            "IdempotencyKeyMissing",
            "missing",
            "the Idempotency-Key header is empty",
        ),
        (
            {"Idempotency-Key": "a,b"},
            "IdempotencyKeyInvalid",
            "not-printable",
            'Idempotency-Key must be printable ASCII (bare, without `"`, `\\` or `,`; or a quoted string)',
        ),
        (
            {"Idempotency-Key": ["k-1", "k-2"]},
            "IdempotencyKeyInvalid",
            "several-keys",
            "send one Idempotency-Key; this request carries 2",
        ),
        (
            {"Idempotency-Key": "k" * 256},
            "IdempotencyKeyInvalid",
            "too-long",
            "Idempotency-Key is longer than 255 characters",
        ),
    ],
)
def test_each_rejection_answers_its_code_and_message_and_logs_its_reason_on_the_route(
    ddb: Any, capsys: pytest.CaptureFixture[str], headers: Any, code: str, reason: str, message: str
) -> None:
    front = Front(ddb)  # after capsys: its Logger writes to the stdout of its creation
    response = front.call(headers)
    assert (response.status, response.body) == (400, {"error": code, "message": message})
    assert decisions(capsys) == [
        {"decision": "IdempotencyKeyRejected", "kind": "refused", "step": ROUTE, "reason": reason}
    ]
    assert front.runs == 0


def test_each_request_outcome_logs_the_key_the_route_and_what_it_did(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    front = Front(ddb)  # after capsys: its Logger writes to the stdout of its creation
    key = key_of("k-1")
    common = {"key": key, "key_hash": key_hash(key), "step": ROUTE, "run": 1}
    # A first request executes and is stored; its retry is replayed; another body is refused
    assert front.call({"Idempotency-Key": "k-1"}).status == 201
    assert front.call({"Idempotency-Key": "k-1"}).status == 201
    mismatch = front.call({"Idempotency-Key": "k-1"}, payload='{"seat": 2}')
    assert mismatch.body == {
        "error": "IdempotencyKeyReused",
        "message": "this Idempotency-Key was already used with a different payload",
    }
    assert decisions(capsys) == [
        {"decision": "Executed", "kind": "fresh", **common, "stored": True, "status": 201},
        {"decision": "Replayed", "kind": "replayed", **common, "status": 201},
        {"decision": "PayloadMismatch", "kind": "refused", **common},
    ]


def test_a_response_that_is_not_stored_logs_stored_false_with_its_status(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    front = Front(ddb)  # after capsys: its Logger writes to the stdout of its creation
    key = key_of("k-2")
    refused = front.call({"Idempotency-Key": "k-2"}, execute=lambda: HttpResponse(409, {"error": "Taken"}))
    assert refused.status == 409
    assert records(ddb) == []
    assert decisions(capsys) == [
        {
            "decision": "Executed",
            "kind": "fresh",
            "key": key,
            "key_hash": key_hash(key),
            "step": ROUTE,
            "run": 1,
            "stored": False,
            "status": 409,
        }
    ]


def test_a_request_in_progress_is_409_request_in_progress_logged_with_its_key(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # retry_after_seconds left at its default: one second
    front = Front(ddb)
    inner: list[HttpResponse] = []

    def slow() -> HttpResponse:
        inner.append(front.call({"Idempotency-Key": "k-3"}))
        return front.create()

    assert front.call({"Idempotency-Key": "k-3"}, execute=slow).status == 201
    [conflict] = inner
    assert (conflict.status, conflict.body, conflict.headers) == (
        409,
        {
            "error": "RequestInProgress",
            "message": "a request with this Idempotency-Key is still being processed",
        },
        {"Retry-After": "1"},
    )
    key = key_of("k-3")
    assert decisions(capsys)[0] == {
        "decision": "InProgressConflict",
        "kind": "refused",
        "key": key,
        "key_hash": key_hash(key),
        "step": ROUTE,
        "run": 1,
    }


def test_the_record_id_is_http_and_the_sha256_of_the_scoped_key(front: Front, ddb: Any) -> None:
    assert front.call({"Idempotency-Key": "k-4"}).status == 201
    [record] = records(ddb)
    digest = hashlib.sha256(json.dumps(key_of("k-4")).encode()).hexdigest()
    assert record["id"]["S"] == f"http#{digest}"


def test_a_key_without_a_value_is_refused_by_powertools_not_run_unprotected(front: Front, ddb: Any) -> None:
    # raise_on_no_idempotency_key: Powertools' default would run execute with no record at all
    with pytest.raises(IdempotencyKeyError):
        front.http.handle(
            route=ROUTE,
            key=Key(value="", label=""),
            payload="{}",
            lambda_context=Context(),
            execute=front.create,
        )
    assert front.runs == 0
    assert records(ddb) == []


def test_one_header_under_two_spellings_is_two_lines() -> None:
    # A Mapping of header names may hold the header twice, as API Gateway's multiValueHeaders
    # keeps a client's spellings: each line is read, so two different keys are refused
    with pytest.raises(Exception, match="carries 2"):
        idempotency_key({"Idempotency-Key": "k-1", "idempotency-key": "k-2"})
    assert idempotency_key({"Idempotency-Key": "k-1", "idempotency-key": '"k-1"'}) == "k-1"


def test_an_absent_header_has_no_value() -> None:
    assert header_value({}, "Idempotency-Key") is None
    assert header_value(None, "Idempotency-Key") is None
    assert header_value({"idempotency-key": ["a", "b"]}, "Idempotency-Key") == "b"


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (r'"a\"b\\c"', 'a"b\\c'),  # RFC 8941's two escapes
        ('"X-1X"', "X-1X"),
        ("X-1X", "X-1X"),
        (" \tk-1\t ", "k-1"),  # optional whitespace: space and tab only
    ],
)
def test_a_key_is_decoded_to_its_characters(value: str, key: str) -> None:
    assert idempotency_key({"Idempotency-Key": value}) == key


@pytest.mark.parametrize("value", ["k-1\n", "\rk-1", "k-1\x0b"])
def test_whitespace_other_than_space_and_tab_is_not_stripped_but_refused(front: Front, value: str) -> None:
    response = front.call({"Idempotency-Key": value})
    assert (response.status, response.body["error"]) == (400, "IdempotencyKeyInvalid")


def test_an_empty_body_is_no_payload(front: Front) -> None:
    assert canonical_payload("") is None
    assert canonical_payload(" \n") is None
    assert front.call({"Idempotency-Key": "k-5"}, payload="").status == 201
    assert front.call({"Idempotency-Key": "k-5"}, payload=None).headers.get("Idempotent-Replayed") == "true"


@pytest.mark.parametrize(
    ("arn", "caller"),
    [
        # An ARN's resource may hold colons: it is all that follows the fifth colon (STS's session
        # names cannot hold one today; the parse does not lean on that)
        ("arn:aws:sts::111:assumed-role/svc/web:identity:1", "arn:aws:sts::111:assumed-role/svc"),
        ("arn:aws:sts::111:assumed-role/svc/s-1", "arn:aws:sts::111:assumed-role/svc"),
        # Not an ARN: the identity as it is, never an error
        ("not-an-arn", "not-an-arn"),
        ("arn:aws:iam::111:user/a:b", "arn:aws:iam::111:user/a:b"),
    ],
)
def test_an_assumed_role_is_its_role_whatever_its_session_name(arn: str, caller: str) -> None:
    assert caller_of({"identity": {"userArn": arn}}) == caller
