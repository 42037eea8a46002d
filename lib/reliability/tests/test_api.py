"""A service's API on the library (tests/visit_api.py, written with the public API only): its
declared routes served, a POST under HTTP idempotency (a replay answered the same, the key's
other payload refused), and every error in the one shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
import visit_api
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from reliability.http import HttpIdempotency
from reliability_helpers import IDEMPOTENCY, answer_headers, make_telemetry, rest_event


class Context:
    function_name = "visits-api"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:visits-api"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@pytest.fixture
def runtime(ddb: Any) -> visit_api.Runtime:
    visit_api.RUNTIME.booked.clear()
    visit_api.RUNTIME.idempotency = lambda: HttpIdempotency(
        persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=ddb),
        stage="dev",
        ttl_seconds=3600,
        telemetry=make_telemetry(),
    )
    return visit_api.RUNTIME


def _call(
    method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    sent = {name: [value] for name, value in {"Content-Type": "application/json", **(headers or {})}.items()}
    answer = visit_api.handler(rest_event(method, path, headers=sent, body=body), Context())  # type: ignore[arg-type]
    return answer["statusCode"], json.loads(answer["body"]), answer_headers(answer)


def test_a_post_runs_once_per_key_and_a_get_reads_what_it_made(runtime: visit_api.Runtime) -> None:
    first = _call("POST", "/visits", '{"seats": 2}', {"Idempotency-Key": "k-1"})
    again = _call("POST", "/visits", '{"seats": 2}', {"Idempotency-Key": "k-1"})
    assert first[0] == again[0] == 202
    assert first[1] == again[1]
    assert first[1]["status_url"] == "https://api.example.com/dev/visits/v-1"
    assert again[2].get("Idempotent-Replayed") == "true"
    assert len(runtime.booked) == 1
    assert _call("GET", "/visits/v-1")[:2] == (200, {"visit_id": "v-1", "seats": 2})


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status", "code"),
    [
        ("POST", "/visits", '{"seats": 2}', {}, 400, "IdempotencyKeyMissing"),
        ("POST", "/visits", "{", {"Idempotency-Key": "k-2"}, 400, "MalformedBody"),
        ("POST", "/visits", '{"seats": 9}', {"Idempotency-Key": "k-3"}, 422, "TooManySeats"),
        (
            "POST",
            "/visits",
            '{"seats": 2}',
            {"Idempotency-Key": "k-4", "Content-Type": "text/plain"},
            415,
            "UnsupportedMediaType",
        ),
        ("GET", "/visits/v-9", None, {}, 404, "VisitNotFound"),
        ("GET", "/nowhere", None, {}, 404, "NotFound"),
        ("DELETE", "/visits", None, {}, 405, "MethodNotAllowed"),
    ],
)
def test_every_refusal_is_in_the_one_error_shape(
    runtime: visit_api.Runtime,
    method: str,
    path: str,
    body: str | None,
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    answered = _call(method, path, body, headers)
    assert (answered[0], answered[1]["error"]) == (status, code)
    assert set(answered[1]) == {"error", "message"}
    assert runtime.booked == []


def test_a_key_reused_with_another_payload_is_refused(runtime: visit_api.Runtime) -> None:
    assert _call("POST", "/visits", '{"seats": 2}', {"Idempotency-Key": "k-5"})[0] == 202
    status, body, _ = _call("POST", "/visits", '{"seats": 3}', {"Idempotency-Key": "k-5"})
    assert (status, body["error"]) == (422, "IdempotencyKeyReused")
    assert len(runtime.booked) == 1
