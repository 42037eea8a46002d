"""What a view reads of its request through `RestApi`'s helpers, on an API built in each test:
the caller API Gateway authenticated (it scopes an Idempotency-Key), every value of a repeated
header, a base64 body decoded (and refused when it is not base64), the media type with its
parameters, and the API's own base URL from the request context and X-Forwarded-Proto."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from pydantic import BaseModel

from reliability.api import RestApi, json_response
from reliability.declaration import Entity, Route, Service
from reliability.http import HttpIdempotency, HttpResponse, scoped_key
from reliability_helpers import IDEMPOTENCY, make_telemetry, read_emitted, rest_event

_HERE = __name__
SERVING: list[RestApi] = []  # the API the running test built, whose helpers the views use


class NewThing(BaseModel):
    name: str
    # a duration: JSON only in the model's JSON form ("PT15M"), which the key is bound to
    hold_for: timedelta | None = None


def _make(route: str, what: str | None) -> Response[str]:
    def execute(request: NewThing, stored_key: str, caller: str) -> HttpResponse:
        body = {"name": request.name, "route": route, "caller": caller, "key": stored_key}
        return HttpResponse(status=201, body=body)

    def parse(body: str | bytes | None) -> NewThing:
        return NewThing.model_validate_json(body or "")

    if what is None:
        return SERVING[-1].idempotent(route, parse=parse, execute=execute)
    return SERVING[-1].idempotent(route, parse=parse, execute=execute, what=what)


def make_thing() -> Response[str]:
    return _make("POST /things", None)


def make_part(thing_id: str) -> Response[str]:
    return _make("POST /things/{thing_id}/parts", "the part")


def where() -> Response[str]:
    api = SERVING[-1]
    return json_response(200, {"status_base": api.status_base(), "caller": api.caller()})


def _route(method: str, path: str, view: str) -> Route:
    return Route(
        method=method,
        path=path,
        operation_id=view,
        view=f"{_HERE}:{view}",
        status=201,
        description=view,
        response="Thing",
        idempotent=method == "POST",
    )


SERVICE = Service(
    name="things",
    entity=Entity(name="thing", id_prefix="t-", table="things"),
    tables=frozenset({"things"}),
    queue="things",
    steps=(),
    routes=(
        _route("POST", "/things", "make_thing"),
        _route("POST", "/things/{thing_id}/parts", "make_part"),
        _route("GET", "/where", "where"),
    ),
)


class Context:
    function_name = "things-api"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:things-api"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@dataclass
class Runtime:
    ddb: Any

    def http_idempotency(self) -> HttpIdempotency:
        return HttpIdempotency(
            persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=self.ddb),
            stage="dev",
            ttl_seconds=3600,
            telemetry=make_telemetry(),
        )


def _serving(runtime: Any) -> Iterator[RestApi]:
    built = RestApi(SERVICE, runtime=runtime)
    SERVING.append(built)
    yield built
    SERVING.remove(built)


@pytest.fixture
def api(ddb: Any) -> Iterator[RestApi]:
    """An API whose POSTs run under HTTP idempotency on the tests' table."""
    yield from _serving(lambda: Runtime(ddb))


@pytest.fixture
def reader() -> Iterator[RestApi]:
    """An API for the views that only read the request (no idempotency: no table)."""
    yield from _serving(lambda: pytest.fail("a reading view needs no runtime"))


JSON = {"Content-Type": "application/json"}


def _call(
    api: RestApi,
    method: str,
    path: str,
    body: str | None = None,
    headers: dict[str, list[str]] | None = None,
    *,
    encoded: bool = False,
    context: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) the API answers; `headers` as API Gateway's multiValueHeaders (its
    single-value `headers` keep each name's last value, as API Gateway's do)."""
    event = rest_event(method, path, headers=headers or {}, body=body, encoded=encoded, context=context)
    answer = api.handler()(event, Context())  # type: ignore[arg-type]
    return answer["statusCode"], json.loads(answer["body"])


def _post(
    api: RestApi, key: str, body: str, path: str = "/things", **more: Any
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": ["application/json"], "Idempotency-Key": [key]}
    return _call(api, "POST", path, body, {**headers, **more.pop("headers", {})}, **more)


def _as(subject: str) -> dict[str, Any]:
    """A request context whose Cognito authorizer authenticated `subject`."""
    return {"authorizer": {"claims": {"sub": subject}}}


def _made(name: str, route: str, caller: str, raw_key: str = "k-1") -> tuple[int, dict[str, Any]]:
    """The 201 of `_make`: the view got `caller` and the key's stored form for `route`."""
    key = scoped_key(stage="dev", route=route, raw_key=raw_key, caller=caller).value
    return 201, {"name": name, "route": route, "caller": caller, "key": key}


def test_the_caller_is_the_authorizers_subject_and_scopes_the_key(api: RestApi) -> None:
    ann = _post(api, "k-1", '{"name": "lamp"}', context=_as("ann"))
    bob = _post(api, "k-1", '{"name": "desk"}', context=_as("bob"))
    assert ann == _made("lamp", "POST /things", "sub:ann")
    assert bob == _made("desk", "POST /things", "sub:bob")


def test_a_view_reads_the_caller_from_the_request_context(reader: RestApi) -> None:
    assert _call(reader, "GET", "/where", context=_as("ann"))[1]["caller"] == "sub:ann"


def test_one_key_on_two_routes_is_two_keys(api: RestApi) -> None:
    thing = _post(api, "k-1", '{"name": "lamp"}')
    part = _post(api, "k-1", '{"name": "lamp"}', path="/things/t-1/parts")
    assert thing == _made("lamp", "POST /things", "anonymous")
    assert part == _made("lamp", "POST /things/{thing_id}/parts", "anonymous")


def test_the_decision_line_names_the_route(api: RestApi, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    _post(api, "k-1", '{"name": "lamp"}')
    _post(api, "k-1", '{"name": "lamp"}')
    lines = read_emitted(capsys.readouterr().out).decisions()
    assert [(line["decision"], line["step"]) for line in lines] == [
        ("Executed", "POST /things"),
        ("Replayed", "POST /things"),
    ]


def test_a_request_with_a_duration_binds_the_key_to_its_json_form(api: RestApi) -> None:
    held = '{"name": "lamp", "hold_for": "PT15M"}'
    assert _post(api, "k-1", held) == _made("lamp", "POST /things", "anonymous")
    assert _post(api, "k-1", held) == _made("lamp", "POST /things", "anonymous")
    status, body = _post(api, "k-1", '{"name": "lamp", "hold_for": "PT20M"}')
    assert (status, body["error"]) == (422, "IdempotencyKeyReused")


def test_the_in_progress_lock_lasts_the_invocations_remaining_time(api: RestApi, ddb: Any) -> None:
    """A retry after this invocation timed out is not refused as in progress for the whole TTL:
    the record's in-progress expiry is the invocation's end (Context: 20 s left)."""
    before = time.time() * 1000
    assert _post(api, "k-1", '{"name": "lamp"}')[0] == 201
    after = time.time() * 1000
    [record] = ddb.scan(TableName=IDEMPOTENCY)["Items"]
    assert before + 20_000 - 1 <= int(record["in_progress_expiration"]["N"]) <= after + 20_000


def test_a_repeated_idempotency_key_header_is_seen_and_refused(api: RestApi) -> None:
    status, body = _post(api, "k-1", '{"name": "lamp"}', headers={"Idempotency-Key": ["k-1", "k-2"]})
    assert (status, body["error"]) == (400, "IdempotencyKeyInvalid")


def test_a_base64_body_is_decoded(api: RestApi) -> None:
    encoded = base64.b64encode(b'{"name": "lamp"}').decode()
    assert _post(api, "k-1", encoded, encoded=True)[1]["name"] == "lamp"


def test_a_base64_body_with_a_character_outside_the_alphabet_is_refused(api: RestApi) -> None:
    encoded = base64.b64encode(b'{"name": "lamp"}').decode()
    status, body = _post(api, "k-1", f"{encoded[:4]}!{encoded[4:]}", encoded=True)
    assert (status, body) == (400, {"error": "MalformedBody", "message": "the body is not valid base64"})


def test_a_json_media_type_with_parameters_is_json(api: RestApi) -> None:
    headers = {"Content-Type": ["application/json; charset=utf-8"]}
    assert _post(api, "k-1", '{"name": "lamp"}', headers=headers)[0] == 201


@pytest.mark.parametrize(("path", "what"), [("/things", "the request"), ("/things/t-1/parts", "the part")])
def test_another_media_type_is_a_415_saying_what_to_send(api: RestApi, path: str, what: str) -> None:
    status, body = _post(api, "k-1", "name=lamp", path=path, headers={"Content-Type": ["text/plain"]})
    assert (status, body) == (
        415,
        {"error": "UnsupportedMediaType", "message": f"send {what} as application/json"},
    )


@pytest.mark.parametrize(
    ("proto", "context", "base"),
    [
        (None, {}, "https://api.example.com/dev"),
        ("http", {}, "http://api.example.com/dev"),
        ("HTTP, https", {}, "http://api.example.com/dev"),
        ("http,https", {}, "http://api.example.com/dev"),
        ("ftp", {}, "https://api.example.com/dev"),
        ("http", {"domainName": None}, ""),
        ("http", {"stage": None}, ""),
    ],
)
def test_the_status_base_is_the_apis_own_url(
    reader: RestApi, proto: str | None, context: dict[str, Any], base: str
) -> None:
    headers = {"X-Forwarded-Proto": [proto]} if proto else {}
    assert _call(reader, "GET", "/where", headers=headers, context=context)[1]["status_base"] == base
