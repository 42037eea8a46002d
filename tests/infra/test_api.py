"""The REST API: routes, edge validation, auth per stage, throttling, access logs."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Template

from infra.config import load_config
from simulator.synth import cdk_context


def _method(template: Template, http_method: str) -> dict[str, Any]:
    (method,) = template.find_resources(
        "AWS::ApiGateway::Method", {"Properties": {"HttpMethod": http_method}}
    ).values()
    return method["Properties"]


def test_routes_are_lambda_proxy_to_the_api_function(dev_app: Template) -> None:
    dev_app.resource_count_is("AWS::ApiGateway::Method", 2)
    paths = {
        r["Properties"]["PathPart"] for r in dev_app.find_resources("AWS::ApiGateway::Resource").values()
    }
    assert paths == {"orders", "{order_id}"}
    for http_method in ("POST", "GET"):
        integration = _method(dev_app, http_method)["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert integration["IntegrationHttpMethod"] == "POST"
        assert "ApiFunction" in json.dumps(integration["Uri"])


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


def test_body_model_is_the_create_order_contract(dev_app: Template) -> None:
    (model,) = dev_app.find_resources("AWS::ApiGateway::Model").values()
    schema = model["Properties"]["Schema"]
    assert model["Properties"]["ContentType"] == "application/json"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"customer_id", "currency", "items"}
    props = schema["properties"]
    assert props["customer_id"] == {"type": "string", "minLength": 1, "maxLength": 64}
    assert props["currency"] == {"type": "string", "pattern": "^[A-Z]{3}$"}
    items = props["items"]
    assert (items["type"], items["minItems"], items["maxItems"]) == ("array", 1, 50)
    item = items["items"]
    assert item["additionalProperties"] is False
    assert set(item["required"]) == {"sku", "quantity"}
    assert item["properties"]["sku"] == {"type": "string", "minLength": 1, "maxLength": 64}
    assert item["properties"]["quantity"] == {"type": "integer", "minimum": 1, "maximum": 100}


def test_edge_rejections_answer_with_the_json_error_shape(dev_app: Template) -> None:
    for response_type, error in (
        ("BAD_REQUEST_PARAMETERS", "IdempotencyKeyMissing"),
        ("BAD_REQUEST_BODY", "InvalidRequest"),
    ):
        (response,) = dev_app.find_resources(
            "AWS::ApiGateway::GatewayResponse", {"Properties": {"ResponseType": response_type}}
        ).values()
        template = response["Properties"]["ResponseTemplates"]["application/json"]
        assert response["Properties"]["StatusCode"] == "400"
        # Render as API Gateway would ($context.error.messageString is already a quoted string).
        rendered = json.loads(template.replace("$context.error.messageString", '"Invalid request body"'))
        assert rendered == {"error": error, "message": "Invalid request body"}


def test_iam_authorization_by_default(dev_app: Template) -> None:
    for http_method in ("POST", "GET"):
        assert _method(dev_app, http_method)["AuthorizationType"] == "AWS_IAM"


def test_no_authorization_on_the_local_stage_only(local_app: Template) -> None:
    for http_method in ("POST", "GET"):
        assert _method(local_app, http_method)["AuthorizationType"] == "NONE"
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
