"""The REST API: routes, edge validation, auth per stage, throttling, access logs."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from aws_cdk.assertions import Template

from infra.config import load_config
from orders import openapi
from simulator.synth import cdk_context


def _method(template: Template, http_method: str) -> dict[str, Any]:
    (method,) = template.find_resources(
        "AWS::ApiGateway::Method", {"Properties": {"HttpMethod": http_method}}
    ).values()
    return method["Properties"]


def test_routes_are_lambda_proxy_to_the_api_function(dev_app: Template) -> None:
    # POST, GET, and the four catch-all ANY methods (/, /orders, /orders/{order_id}, /{proxy+})
    dev_app.resource_count_is("AWS::ApiGateway::Method", 6)
    paths = {
        r["Properties"]["PathPart"] for r in dev_app.find_resources("AWS::ApiGateway::Resource").values()
    }
    assert paths == {"orders", "{order_id}", "{proxy+}"}
    for method in dev_app.find_resources("AWS::ApiGateway::Method").values():
        integration = method["Properties"]["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert integration["IntegrationHttpMethod"] == "POST"
        assert "ApiFunction" in json.dumps(integration["Uri"])


def test_every_other_path_and_method_reaches_the_function(dev_app: Template) -> None:
    # Regression (root cause 4): without catch-all methods API Gateway answers an unknown path or
    # method with its own 403 "Missing Authentication Token"
    methods = dev_app.find_resources("AWS::ApiGateway::Method", {"Properties": {"HttpMethod": "ANY"}})
    resources = dev_app.find_resources("AWS::ApiGateway::Resource")
    on = set()
    for method in methods.values():
        resource = method["Properties"]["ResourceId"]
        on.add(resources[resource["Ref"]]["Properties"]["PathPart"] if "Ref" in resource else "/")
    assert on == {"/", "orders", "{order_id}", "{proxy+}"}


def test_post_requires_the_idempotency_key_and_a_valid_body(dev_app: Template) -> None:
    post = _method(dev_app, "POST")
    assert post["RequestParameters"] == {"method.request.header.Idempotency-Key": True}
    (model_id,) = template_ids = list(dev_app.find_resources("AWS::ApiGateway::Model"))
    assert post["RequestModels"] == {"application/json": {"Ref": model_id}}, template_ids
    (validator,) = [
        v
        for logical_id, v in dev_app.find_resources("AWS::ApiGateway::RequestValidator").items()
        if logical_id == post["RequestValidatorId"]["Ref"]
    ]
    assert validator["Properties"]["ValidateRequestBody"] is True
    assert validator["Properties"]["ValidateRequestParameters"] is True


def test_get_validates_its_path_parameter(dev_app: Template) -> None:
    get = _method(dev_app, "GET")
    assert get["RequestParameters"] == {"method.request.path.order_id": True}
    assert "RequestValidatorId" in get


def test_body_model_is_the_create_order_contract_from_the_published_document(dev_app: Template) -> None:
    (model,) = dev_app.find_resources("AWS::ApiGateway::Model").values()
    schema = model["Properties"]["Schema"]
    assert model["Properties"]["ContentType"] == "application/json"
    # One definition: the model is the pydantic contract's schema, through openapi.json
    published = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        **openapi.document()["components"]["schemas"]["CreateOrderRequest"],
    }
    assert schema == published
    jsonschema.Draft4Validator.check_schema(schema)
    props = schema["properties"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"customer_id", "currency", "items"}
    item = props["items"]["items"]
    assert item["additionalProperties"] is False
    assert (item["properties"]["quantity"]["minimum"], item["properties"]["quantity"]["maximum"]) == (1, 100)


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


def test_every_route_of_the_template_is_an_operation_of_the_published_document(dev_app: Template) -> None:
    resources = dev_app.find_resources("AWS::ApiGateway::Resource")

    def path(resource_ref: dict[str, Any]) -> str:
        parts: list[str] = []
        while "Ref" in resource_ref and resource_ref["Ref"] in resources:
            props = resources[resource_ref["Ref"]]["Properties"]
            parts.insert(0, props["PathPart"])
            resource_ref = props["ParentId"]
        return "/" + "/".join(parts)

    routes = {
        (m["Properties"]["HttpMethod"].lower(), path(m["Properties"]["ResourceId"]))
        for m in dev_app.find_resources("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] != "ANY"
    }
    documented = {
        (method, p) for p, operations in openapi.document()["paths"].items() for method in operations
    }
    assert routes == documented
