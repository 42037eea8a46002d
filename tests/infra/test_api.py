"""The REST API: each route of orders.workflow.ROUTES, edge validation, auth per stage, throttling,
access logs."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from aws_cdk.assertions import Template

from infra.api_model import model_schema
from infra.config import load_config
from orders import openapi
from orders.workflow import ROUTES
from reliability.cdk.api import CATCH_ALL
from simulator.synth import cdk_context

# Each route of orders.workflow.ROUTES by (METHOD, path): the tests iterate it, so a new route is
# covered without a new test.
ROUTE = {(route.method, route.path): route for route in ROUTES}


def _resource_paths(template: Template) -> dict[str, str]:
    """Each API resource's logical id -> its full path (`/orders/{order_id}`)."""
    resources = template.find_resources("AWS::ApiGateway::Resource")

    def path(logical_id: str) -> str:
        props = resources[logical_id]["Properties"]
        parent = props["ParentId"]
        prefix = path(parent["Ref"]) if "Ref" in parent and parent["Ref"] in resources else ""
        return f"{prefix}/{props['PathPart']}"

    return {logical_id: path(logical_id) for logical_id in resources}


def _methods(template: Template) -> dict[tuple[str, str], dict[str, Any]]:
    """Every method's properties by (HttpMethod, path); the root is `/`."""
    paths = _resource_paths(template)
    methods = {}
    for method in template.find_resources("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        on = paths.get(props["ResourceId"].get("Ref", ""), "/")
        methods[(props["HttpMethod"], on)] = props
    return methods


def _prefixes(path: str) -> set[str]:
    parts = path.strip("/").split("/")
    return {"/" + "/".join(parts[: n + 1]) for n in range(len(parts))}


def test_each_route_is_a_lambda_proxy_method_to_the_api_function(dev_app: Template) -> None:
    methods = _methods(dev_app)
    routes = {key for key in methods if key[0] != CATCH_ALL}
    documented = {
        (method.upper(), path)
        for path, operations in openapi.document()["paths"].items()
        for method in operations
    }
    assert routes == set(ROUTE) == documented
    for props in methods.values():
        integration = props["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert integration["IntegrationHttpMethod"] == "POST"
        assert "ApiFunction" in json.dumps(integration["Uri"])


def test_every_other_path_and_method_reaches_the_function(dev_app: Template) -> None:
    # Regression (root cause 4): without catch-all methods API Gateway answers an unknown path or
    # method with its own 403 "Missing Authentication Token"
    resources = set().union(*(_prefixes(path) for _, path in ROUTE)) | {"/{proxy+}"}
    assert set(_resource_paths(dev_app).values()) == resources
    catch_all = {path for method, path in _methods(dev_app) if method == CATCH_ALL}
    assert catch_all == resources | {"/"}


def test_each_route_requires_its_parameters_and_validates_its_body(dev_app: Template) -> None:
    methods = _methods(dev_app)
    validators = dev_app.find_resources("AWS::ApiGateway::RequestValidator")
    models = dev_app.find_resources("AWS::ApiGateway::Model")
    for key, route in ROUTE.items():
        props = methods[key]
        expected = {f"method.request.path.{name}": True for name in re.findall(r"\{(\w+)\}", route.path)}
        if route.idempotent:
            expected["method.request.header.Idempotency-Key"] = True
        assert props.get("RequestParameters", {}) == expected, key
        validator = validators[props["RequestValidatorId"]["Ref"]]["Properties"]
        assert validator["ValidateRequestParameters"] is True, key
        assert validator["ValidateRequestBody"] is (route.request is not None), key
        if route.request is None:
            assert "RequestModels" not in props, key
            continue
        model = models[props["RequestModels"]["application/json"]["Ref"]]["Properties"]
        # One definition: the model is the pydantic contract's schema, through openapi.json, in
        # draft 4's words
        assert model["Schema"] == model_schema(openapi.document()["components"]["schemas"][route.request]), (
            key
        )
        assert model["Schema"]["$schema"] == "http://json-schema.org/draft-04/schema#"
        assert model["ContentType"] == "application/json"
        jsonschema.Draft4Validator.check_schema(model["Schema"])
    # One model per request body, however many routes take it
    assert len(models) == len({route.request for route in ROUTES if route.request})


def test_the_create_order_body_is_closed_and_bounded(dev_app: Template) -> None:
    (schema,) = [
        model["Properties"]["Schema"]
        for model in dev_app.find_resources("AWS::ApiGateway::Model").values()
        if model["Properties"]["Name"] == "CreateOrder"
    ]
    props = schema["properties"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"customer_id", "currency", "items"}
    item = props["items"]["items"]
    assert item["additionalProperties"] is False
    assert (item["properties"]["quantity"]["minimum"], item["properties"]["quantity"]["maximum"]) == (1, 100)


def test_the_create_order_model_reads_integers_as_the_document_does(dev_app: Template) -> None:
    # Regression: draft 4's `integer` refused 65.0, which the document (JSON Schema 2020-12) and
    # the function take as 65, so the edge answered 400 to an order its document admits
    (schema,) = [
        model["Properties"]["Schema"]
        for model in dev_app.find_resources("AWS::ApiGateway::Model").values()
        if model["Properties"]["Name"] == "CreateOrder"
    ]
    edge = jsonschema.Draft4Validator(schema)
    order = {"customer_id": "c", "currency": "EUR"}
    assert edge.is_valid({**order, "items": [{"sku": "sku-1", "quantity": 65.0}]})
    assert edge.is_valid({**order, "items": [{"sku": "sku-1", "quantity": 65}]})
    for refused in (65.5, "65", True, 0, 101.0):
        assert not edge.is_valid({**order, "items": [{"sku": "sku-1", "quantity": refused}]}), refused
    assert not edge.is_valid({**order, "items": [{"sku": "sku-1", "quantity": 1}] * 2})  # uniqueItems


def _render(template: str, message: str) -> Any:
    """A gateway response body as API Gateway renders it ($context.error.messageString is quoted)."""
    return json.loads(template.replace("$context.error.messageString", json.dumps(message)))


def test_every_gateway_answer_is_in_the_error_shape(dev_app: Template) -> None:
    # Regression (root cause 4): only the two BAD_REQUEST responses carried the shape
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in dev_app.find_resources("AWS::ApiGateway::GatewayResponse").values()
    }
    assert {"DEFAULT_4XX", "DEFAULT_5XX", "THROTTLED", "MISSING_AUTHENTICATION_TOKEN"} <= set(responses)
    assert set(responses) == set(openapi.GATEWAY)
    for response_type, props in responses.items():
        body = _render(props["ResponseTemplates"]["application/json"], "Forbidden")
        assert set(body) == {"error", "message"}, response_type
        assert body["message"] == "Forbidden"
        assert re.fullmatch(r"[A-Z][A-Za-z]+", body["error"]), response_type
        if response_type in openapi.GATEWAY_DEFAULTS:
            assert "StatusCode" not in props  # each type keeps its own status
        else:
            assert props["StatusCode"] == str(openapi.GATEWAY[response_type]["statusCode"])
    assert responses["BAD_REQUEST_PARAMETERS"]["StatusCode"] == "400"
    assert (
        _render(responses["BAD_REQUEST_BODY"]["ResponseTemplates"]["application/json"], "x")["error"]
        == "InvalidRequest"
    )
    assert responses["THROTTLED"]["StatusCode"] == "429"
    assert responses["THROTTLED"]["ResponseParameters"] == {"gatewayresponse.header.Retry-After": "'1'"}


def test_iam_authorization_by_default(dev_app: Template) -> None:
    for method in dev_app.find_resources("AWS::ApiGateway::Method").values():
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM"


def test_no_authorization_on_the_local_stage_only(local_app: Template) -> None:
    for method in local_app.find_resources("AWS::ApiGateway::Method").values():
        assert method["Properties"]["AuthorizationType"] == "NONE"
    for stage in ("dev", "prod"):
        assert load_config(cdk_context(stage)["retrysafe"], stage).api_auth == "IAM"


def test_stage_throttling_access_logs_and_tracing(dev_app: Template) -> None:
    throttle = load_config(cdk_context("dev")["retrysafe"], "dev").api_throttle
    (stage,) = dev_app.find_resources("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == "dev"
    assert props["TracingEnabled"] is True
    assert props["MethodSettings"] == [
        {
            "HttpMethod": "*",
            "ResourcePath": "/*",
            "ThrottlingRateLimit": throttle.rate,
            "ThrottlingBurstLimit": throttle.burst,
            "DataTraceEnabled": False,
            "LoggingLevel": "ERROR",
        }
    ]
    access = props["AccessLogSetting"]
    assert access["DestinationArn"]["Fn::GetAtt"][0].startswith("OrdersApiAccessLogs")
    assert json.loads(access["Format"])["requestId"] == "$context.requestId"
    dev_app.has_resource_properties(
        "AWS::Logs::LogGroup",
        {"LogGroupName": "/aws/apigateway/retrysafe-dev-api/access", "RetentionInDays": 30},
    )
