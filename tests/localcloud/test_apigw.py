"""The REST API emulation without sockets or moto: routes from the template, validation, events."""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
from typing import Any

import pytest

from emulator.apigw_template import RestApiSpec, Route, Throttle, apis_from_template
from localcloud.apigw import HttpRequest, RestApiHandler, TokenBucket
from localcloud.apigw_server import RestApiServer


@pytest.fixture
def spec(assembly) -> RestApiSpec:
    template = json.loads((assembly / "fx-local-app.template.json").read_text())
    resources = template["Resources"]
    physical = {logical: f"id-{logical[:6].lower()}" for logical in resources}
    functions = {
        logical: f"fn-{logical}"
        for logical, res in resources.items()
        if res["Type"] == "AWS::Lambda::Function"
    }
    (api,) = apis_from_template(template, physical_ids=physical, function_names=functions)
    return api


class FakeLambda:
    def __init__(self, payload: Any = None, error: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.payload = payload if payload is not None else {"statusCode": 200, "body": "ok"}
        self.error = error

    def __call__(self, function: str, event: dict[str, Any]) -> tuple[Any, str | None]:
        self.calls.append((function, event))
        return self.payload, self.error


def request(
    method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None, query: str = ""
):
    return HttpRequest(
        method=method, path=path, query=query, headers=list((headers or {}).items()), body=body
    )


def handler(spec: RestApiSpec, fake: FakeLambda) -> RestApiHandler:
    return RestApiHandler(spec, invoke=fake, account_id="123456789012", region="us-east-1")


def test_routes_validators_models_and_stage_come_from_the_template(spec):
    routes = {(route.method, route.resource_path): route for route in spec.routes}

    assert spec.stage == "local"
    assert set(routes) == {("POST", "/orders"), ("GET", "/orders/{order_id}"), ("ANY", "/files/{proxy+}")}
    post = routes[("POST", "/orders")]
    assert post.function is not None
    assert post.function.startswith("fn-ApiFunction")
    assert post.integration == "AWS_PROXY"
    assert post.required_params == ("header.Idempotency-Key",)
    assert post.validate_body
    assert post.validate_params
    assert post.models["application/json"]["required"] == ["sku", "quantity"]
    assert "BAD_REQUEST_BODY" in spec.gateway_responses


def test_proxy_event_has_the_rest_api_shape(spec):
    fake = FakeLambda()
    response = handler(spec, fake).handle(
        request("GET", "/local/orders/o-1", headers={"X-A": "1", "User-Agent": "t"}, query="a=1&a=2&b=")
    )

    assert response.status == 200
    _, event = fake.calls[0]
    assert event["resource"] == "/orders/{order_id}"
    assert event["path"] == "/orders/o-1"
    assert event["httpMethod"] == "GET"
    assert event["pathParameters"] == {"order_id": "o-1"}
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["headers"]["X-A"] == "1"
    assert event["multiValueHeaders"]["X-A"] == ["1"]
    assert event["headers"]["X-Forwarded-Proto"] == "http"
    assert event["headers"]["X-Forwarded-For"] == "127.0.0.1"
    assert event["body"] is None
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["stage"] == "local"
    assert context["resourcePath"] == "/orders/{order_id}"
    assert context["path"] == "/local/orders/o-1"
    assert context["identity"]["sourceIp"] == "127.0.0.1"
    assert context["identity"]["userAgent"] == "t"
    assert context["requestId"]
    assert context["apiId"] == spec.api_id


def test_greedy_proxy_path(spec):
    fake = FakeLambda()
    handler(spec, fake).handle(request("DELETE", "/local/files/a/b/c.txt"))

    assert fake.calls[0][1]["pathParameters"] == {"proxy": "a/b/c.txt"}
    assert fake.calls[0][1]["resource"] == "/files/{proxy+}"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/local/nope"), ("PUT", "/local/orders"), ("GET", "/other/orders"), ("GET", "/")],
)
def test_unknown_route_is_missing_authentication_token(spec, method, path):
    response = handler(spec, FakeLambda()).handle(request(method, path))

    assert response.status == 403
    assert json.loads(response.body) == {"message": "Missing Authentication Token"}
    assert ("x-amzn-ErrorType", "MissingAuthenticationTokenException") in response.headers


def test_missing_required_header_is_400_before_the_function(spec):
    fake = FakeLambda()
    response = handler(spec, fake).handle(
        request(
            "POST",
            "/local/orders",
            body=b'{"sku": "a", "quantity": 1}',
            headers={"Content-Type": "application/json"},
        )
    )

    assert response.status == 400
    assert json.loads(response.body) == {"message": "Missing required request parameters: [Idempotency-Key]"}
    assert fake.calls == []


@pytest.mark.parametrize("body", [b'{"sku": "a"}', b'{"sku": "a", "quantity": 0}', b"not json", b""])
def test_invalid_body_uses_the_gateway_response_template(spec, body):
    fake = FakeLambda()
    response = handler(spec, fake).handle(
        request(
            "POST",
            "/local/orders",
            body=body,
            headers={"Content-Type": "application/json", "Idempotency-Key": "k"},
        )
    )

    assert response.status == 400
    document = json.loads(response.body)
    assert document["message"] == "Invalid request body"
    assert document["detail"]
    assert fake.calls == []


def test_valid_request_reaches_the_function_and_maps_the_response(spec):
    fake = FakeLambda(
        {
            "statusCode": 201,
            "headers": {"content-type": "application/json", "x-single": "1"},
            "multiValueHeaders": {"x-multi": ["a", "b"]},
            "body": '{"ok": true}',
        }
    )
    response = handler(spec, fake).handle(
        request(
            "POST",
            "/local/orders",
            body=b'{"sku": "a", "quantity": 2}',
            headers={"Content-Type": "application/json", "Idempotency-Key": "k"},
        )
    )

    assert response.status == 201
    assert json.loads(response.body) == {"ok": True}
    assert ("x-multi", "a") in response.headers
    assert ("x-multi", "b") in response.headers
    assert ("x-single", "1") in response.headers
    assert fake.calls[0][1]["body"] == '{"sku": "a", "quantity": 2}'


@pytest.mark.parametrize(
    ("payload", "error", "status"),
    [
        ({"errorType": "KeyError", "errorMessage": "x"}, "Unhandled", 502),
        ({"errorType": "Sandbox.Timedout", "errorMessage": "x"}, "Unhandled", 504),
        ("not a dict", None, 502),
        ({"statusCode": "abc"}, None, 502),
    ],
)
def test_function_errors_and_malformed_responses(spec, payload, error, status):
    response = handler(spec, FakeLambda(payload, error)).handle(request("GET", "/local/orders/1"))

    assert response.status == status


def test_mock_integration_answers_from_its_integration_response():
    route = Route(
        resource_path="/x",
        resource_id="r",
        method="OPTIONS",
        integration="MOCK",
        mock_status=204,
        mock_headers={"Access-Control-Allow-Origin": "*"},
    )
    api = RestApiSpec(api_id="a", name="n", stage="s", routes=(route,), gateway_responses={})

    response = handler(api, FakeLambda()).handle(request("OPTIONS", "/s/x"))

    assert response.status == 204
    assert ("Access-Control-Allow-Origin", "*") in response.headers


def test_exact_method_wins_over_any_and_literal_over_parameter():
    routes = (
        Route(
            resource_path="/a/{id}", resource_id="1", method="GET", integration="AWS_PROXY", function="param"
        ),
        Route(resource_path="/a/b", resource_id="2", method="ANY", integration="AWS_PROXY", function="any"),
        Route(resource_path="/a/b", resource_id="3", method="GET", integration="AWS_PROXY", function="exact"),
    )
    api = RestApiSpec(api_id="a", name="n", stage="s", routes=routes, gateway_responses={})
    fake = FakeLambda()

    handler(api, fake).handle(request("GET", "/s/a/b"))
    handler(api, fake).handle(request("POST", "/s/a/b"))
    handler(api, fake).handle(request("GET", "/s/a/c"))

    assert [function for function, _ in fake.calls] == ["exact", "any", "param"]


# -- the real app's edge (the synthesized `local` stage) -------------------------------------------
@pytest.fixture(scope="module")
def app_spec(local_assembly) -> RestApiSpec:
    template = json.loads((local_assembly / "retrysafe-local-app.template.json").read_text())
    resources = template["Resources"]
    functions = {k: f"fn-{k}" for k, v in resources.items() if v["Type"] == "AWS::Lambda::Function"}
    (api,) = apis_from_template(template, physical_ids={k: k for k in resources}, function_names=functions)
    return api


def _shaped(response) -> dict[str, Any]:
    body = json.loads(response.body)
    assert set(body) == {"error", "message"}, body
    return body


def test_a_body_nested_past_the_recursion_limit_is_a_400_in_the_error_shape(app_spec):
    # Regression (root cause 3): the edge's validation caught ValueError, not RecursionError (500)
    fake = FakeLambda()
    headers = {"Content-Type": "application/json", "Idempotency-Key": "deep"}
    for body in (b"[" * 1_000, b"[" * 100_000, b'{"customer_id": ' + b"[" * 50_000 + b"}"):
        response = handler(app_spec, fake).handle(
            request("POST", "/local/orders", body=body, headers=headers)
        )
        assert response.status == 400
        assert _shaped(response)["error"] == "InvalidRequest"
    assert fake.calls == []


@pytest.mark.parametrize(
    ("method", "path", "resource"),
    [
        ("PUT", "/local/orders", "/orders"),
        ("DELETE", "/local/orders", "/orders"),
        ("OPTIONS", "/local/orders", "/orders"),
        ("GET", "/local/orders", "/orders"),
        ("POST", "/local/orders/o-1", "/orders/{order_id}"),
        ("GET", "/local/orders/a/b", "/{proxy+}"),
        ("GET", "/local/", "/"),
        ("HEAD", "/local/x", "/{proxy+}"),
    ],
)
def test_other_methods_and_paths_reach_the_function(app_spec, method, path, resource):
    # Regression (root cause 4): these were API Gateway's own 403 "Missing Authentication Token"
    fake = FakeLambda({"statusCode": 405, "body": '{"error": "MethodNotAllowed", "message": "m"}'})
    response = handler(app_spec, fake).handle(request(method, path))
    assert response.status == 405
    assert fake.calls[0][1]["resource"] == resource


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/"), ("GET", "/prod/orders"), ("FOO", "/local/orders"), ("TRACE", "/x")]
)
def test_what_no_route_can_take_is_a_403_in_the_error_shape(app_spec, method, path):
    response = handler(app_spec, FakeLambda()).handle(request(method, path))
    assert response.status == 403
    assert _shaped(response)["error"] == "MissingAuthenticationToken"


def test_a_function_failure_is_a_shaped_5xx(app_spec):
    failed = handler(app_spec, FakeLambda({"errorType": "KeyError"}, "Unhandled")).handle(
        request("GET", "/local/orders/o-1")
    )
    assert failed.status == 502
    assert _shaped(failed)["error"] == "GatewayError"


def test_the_stage_throttle_answers_429_with_retry_after(app_spec):
    assert app_spec.throttle == Throttle(rate=50.0, burst=100)
    spec = dataclasses.replace(app_spec, throttle=Throttle(rate=0.001, burst=2))
    edge = handler(spec, FakeLambda())
    statuses = [edge.handle(request("GET", "/local/orders/o-1")).status for _ in range(3)]
    assert statuses == [200, 200, 429]
    throttled = edge.handle(request("GET", "/local/orders/o-1"))
    assert _shaped(throttled)["error"] == "TooManyRequests"
    assert ("Retry-After", "1") in throttled.headers


def test_the_token_bucket_refills_at_the_rate():
    now = [0.0]
    bucket = TokenBucket(Throttle(rate=10, burst=2), clock=lambda: now[0])
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    now[0] += 0.1
    assert [bucket.take() for _ in range(2)] == [True, False]


# -- over a socket --------------------------------------------------------------------------------
@pytest.fixture
def served(app_spec):
    fake = FakeLambda({"statusCode": 202, "body": "{}"})
    server = RestApiServer(handler(app_spec, fake), port=0)
    server.start()
    yield server, fake
    server.stop()


def _raw_http(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(data)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, dict(response.getheaders()), response.read()


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (b"GET / / HTTP/1.1\r\n\r\n", 400, "RequestRefused"),  # a malformed request line
        (b"GET /local/orders/o-1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "RequestRefused"),
        (
            b"POST /local/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n",
            413,
            "RequestTooLarge",
        ),
        (b"BREW /local/orders HTTP/1.1\r\nHost: x\r\n\r\n", 403, "MissingAuthenticationToken"),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "RequestRefused"),
    ],
)
def test_what_http_server_refuses_is_in_the_error_shape(served, data, status, code):
    server, fake = served
    got, headers, body = _raw_http(server.port, data)
    assert got == status
    assert json.loads(body)["error"] == code
    assert headers["Content-Type"] == "application/json"
    assert fake.calls == []


def test_the_event_names_the_servers_own_endpoint_never_the_clients_host(served):
    server, fake = served
    data = (
        b"GET /local/orders/o-1 HTTP/1.1\r\nHost: evil.test:1\r\n"
        b"X-Forwarded-Proto: gopher\r\nX-Forwarded-Port: 9\r\n\r\n"
    )
    assert _raw_http(server.port, data)[0] == 202
    event = fake.calls[0][1]
    assert event["requestContext"]["domainName"] == f"127.0.0.1:{server.port}"
    assert event["headers"]["X-Forwarded-Proto"] == "http"
    assert event["multiValueHeaders"]["X-Forwarded-Port"] == [str(server.port)]
    assert event["headers"]["Host"] == "evil.test:1"  # forwarded as a header, as API Gateway does


def test_an_error_of_the_emulation_is_a_shaped_502_not_a_500(served, monkeypatch):
    server, _ = served

    def broken(_request):
        raise RuntimeError("emulation bug")

    monkeypatch.setattr(server.handler, "handle", broken)
    status, _, body = _raw_http(server.port, b"GET /local/orders/o-1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 502
    assert json.loads(body)["error"] == "GatewayError"
