"""The REST API emulation without sockets or moto: routes from the template, validation, events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcloud.apigw import HttpRequest, RestApiHandler, RestApiSpec, Route, apis_from_template


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
