"""What a client gets from a service's `RestApi` for each kind of answer, on an API built in each
test (its routes registered then, as a handler module's import does): a view's model as the
route's status, its path parameters by name, and every error in the one shape, with its status,
code, message and headers exactly (a 405's Allow, a 503's Retry-After), and the line logged for a
transient failure (INFO) and an unexpected one (ERROR, with its traceback)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from pydantic import BaseModel

from reliability.api import RestApi
from reliability.declaration import Entity, Route, Service
from reliability.errors import FenceBusy, RequestError, StoreError, TransientError
from reliability.http import HttpIdempotency, HttpResponse
from reliability.observability import logger
from reliability_helpers import IDEMPOTENCY, answer_headers, make_telemetry, read_emitted, rest_event

_HERE = __name__


class Thing(BaseModel):
    thing_id: str
    made: date  # a date: only the JSON mode of `model_dump` makes it a string


class NewThing(BaseModel):
    name: str


class Taken(RequestError):
    status = 409
    code = "ThingTaken"


def put_thing(thing_id: str) -> Thing:
    return Thing(thing_id=thing_id, made=date(2026, 11, 27))


def get_thing(thing_id: str) -> Response[str]:
    return Response(status_code=200, content_type="text/plain", body=f"thing {thing_id}")


SERVING: list[RestApi] = []  # the API a test built: the one whose request helpers a POST view uses


def make_thing() -> Response[str]:
    def execute(request: NewThing, stored_key: str, caller: str) -> HttpResponse:
        return HttpResponse(status=201, body={"thing_id": "t-1", "name": request.name})

    return SERVING[-1].idempotent(
        "POST /things", parse=lambda body: NewThing.model_validate_json(body or ""), execute=execute
    )


def fail(kind: str) -> Thing:
    if kind == "transient":
        raise TransientError("dynamodb: ThrottlingException")
    if kind == "busy":
        raise FenceBusy("another attempt holds the fence")
    if kind == "taken":
        raise Taken("t-1 is taken by another caller")
    if kind == "store":
        raise StoreError("the fence table refused the write")
    raise RuntimeError(f"a bug: {kind}")


def _route(method: str, path: str, view: str, status: int = 200) -> Route:
    return Route(
        method=method,
        path=path,
        operation_id=f"{method.lower()}{view.title()}",
        view=f"{_HERE}:{view}",
        status=status,
        description=view,
        response="Thing",
    )


SERVICE = Service(
    name="things",
    entity=Entity(name="thing", id_prefix="t-", table="things"),
    tables=frozenset({"things"}),
    queue="things",
    steps=(),
    routes=(
        _route("PUT", "/things/{thing_id}", "put_thing", status=201),
        _route("GET", "/things/{thing_id}", "get_thing"),
        _route("GET", "/failures/{kind}", "fail"),
        _route("POST", "/things", "make_thing", status=201),
    ),
)


class Context:
    function_name = "things-api"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:things-api"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    """The service logger's lines (its handler's stream swapped by hand, as test_handlers does)."""
    stream = io.StringIO()
    handler: Any = logger.registered_handler
    previous, handler.stream = handler.stream, stream
    try:
        yield stream
    finally:
        handler.stream = previous


def _api() -> RestApi:
    return RestApi(SERVICE, runtime=lambda: pytest.fail("no view here needs the runtime"))


def _call(
    method: str,
    path: str,
    api: RestApi | None = None,
    body: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) the API's Lambda handler answers an API Gateway REST event with."""
    sent = {name: [value] for name, value in {"Accept": "application/json", **(headers or {})}.items()}
    answer = (api or _api()).handler()(rest_event(method, path, headers=sent, body=body), Context())  # type: ignore[arg-type]
    return answer["statusCode"], answer_headers(answer), answer["body"]


def test_a_views_model_is_the_routes_status_in_its_json_form() -> None:
    status, headers, body = _call("PUT", "/things/t-7")
    assert (status, json.loads(body)) == (201, {"thing_id": "t-7", "made": "2026-11-27"})
    assert headers["Content-Type"] == "application/json"


def test_a_response_the_view_returns_is_sent_as_it_is() -> None:
    status, headers, body = _call("GET", "/things/t-7")
    assert (status, headers["Content-Type"], body) == (200, "text/plain", "thing t-7")


def test_the_handler_is_built_once_with_its_routes() -> None:
    api = _api()
    handler = api.handler()
    assert callable(handler)
    assert api.handler() is handler
    assert _call("PUT", "/things/t-1", api)[0] == 201


def test_a_transient_failure_is_a_503_with_retry_after_and_an_info_line(log: io.StringIO) -> None:
    status, headers, body = _call("GET", "/failures/transient")
    assert status == 503
    assert json.loads(body) == {
        "error": "ServiceUnavailable",
        "message": "temporarily unavailable, retry with the same key",
    }
    assert headers["Retry-After"] == "1"
    [line] = [line for line in read_emitted(log.getvalue()).logs if "error_type" in line]
    assert (line["level"], line["message"], line["error_type"]) == (
        "INFO",
        "transient failure, asking the client to retry",
        "TransientError",
    )


def test_every_retryable_error_is_the_same_503_naming_its_type(log: io.StringIO) -> None:
    status, headers, body = _call("GET", "/failures/busy")
    assert (status, json.loads(body)["error"], headers["Retry-After"]) == (503, "ServiceUnavailable", "1")
    [line] = [line for line in read_emitted(log.getvalue()).logs if "error_type" in line]
    assert line["error_type"] == "FenceBusy"


@pytest.mark.parametrize(("kind", "error_type"), [("bug", "RuntimeError"), ("store", "StoreError")])
def test_an_unexpected_error_is_a_500_and_an_error_line_with_its_traceback(
    log: io.StringIO, kind: str, error_type: str
) -> None:
    status, headers, body = _call("GET", f"/failures/{kind}")
    assert status == 500
    assert json.loads(body) == {
        "error": "InternalError",
        "message": "internal error; retry with the same Idempotency-Key",
    }
    assert "Retry-After" not in headers
    [line] = [line for line in read_emitted(log.getvalue()).logs if "error_type" in line]
    assert (line["level"], line["message"], line["error_type"]) == ("ERROR", "unhandled error", error_type)
    assert line["exception_name"] == error_type
    assert "Traceback" in line["exception"]


def test_a_request_error_is_its_status_code_and_text() -> None:
    status, _, body = _call("GET", "/failures/taken")
    assert (status, json.loads(body)) == (
        409,
        {"error": "ThingTaken", "message": "t-1 is taken by another caller"},
    )


@pytest.mark.parametrize("path", ["/things/t-1", "/things/t-1/", "/things/X"])
def test_another_method_on_a_known_path_is_a_405_naming_the_allowed_ones(path: str) -> None:
    status, headers, body = _call("DELETE", path)
    assert status == 405
    assert json.loads(body) == {
        "error": "MethodNotAllowed",
        "message": "DELETE is not allowed here; allowed: GET, PUT",
    }
    assert headers["Allow"] == "GET, PUT"


def test_an_unknown_path_is_a_404_without_an_allow_header() -> None:
    status, headers, body = _call("GET", "/nowhere")
    assert (status, json.loads(body)) == (404, {"error": "NotFound", "message": "no such resource"})
    assert "Allow" not in headers
    assert _call("GET", "/things/t-1/parts")[0] == 404  # below a known path is not that path


@dataclass
class Runtime:
    """The composition root an API built in a test is given: one HttpIdempotency per request."""

    ddb: Any
    built: int = 0

    def http_idempotency(self) -> HttpIdempotency:
        self.built += 1
        return HttpIdempotency(
            persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=self.ddb),
            stage="dev",
            ttl_seconds=3600,
            telemetry=make_telemetry(),
        )


def test_an_idempotent_post_runs_under_the_runtime_the_api_was_given(ddb: Any) -> None:
    runtime = Runtime(ddb)
    api = RestApi(SERVICE, runtime=lambda: runtime)
    SERVING.append(api)
    try:
        sent = {"Content-Type": "application/json", "Idempotency-Key": "k-1"}
        first = _call("POST", "/things", api, '{"name": "lamp"}', sent)
        again = _call("POST", "/things", api, '{"name": "lamp"}', sent)
    finally:
        SERVING.remove(api)
    assert (first[0], json.loads(first[2])) == (201, {"thing_id": "t-1", "name": "lamp"})
    assert (again[0], json.loads(again[2]), again[1]["Idempotent-Replayed"]) == (
        201,
        json.loads(first[2]),
        "true",
    )
    assert runtime.built == 2
