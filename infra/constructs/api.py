"""The orders REST API: two routes to one Lambda proxy, validated at the edge; every other path
and method reaches the function too (404/405), and every answer of the gateway's own is in the
service's error shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import ApiAuth, ApiThrottle
from infra.nag import acknowledge

IDEMPOTENCY_HEADER = "Idempotency-Key"

# The published OpenAPI description (written by `make openapi` from the contract models in
# functions/orders; read here as data, never imported): the edge's body model and API Gateway's
# own error answers come from it, so the edge, the function and the document agree.
OPENAPI_DOCUMENT = Path(__file__).resolve().parents[2] / "functions" / "orders" / "openapi.json"
OPENAPI = json.loads(OPENAPI_DOCUMENT.read_text())
JSON_SCHEMA_DRAFT4 = "http://json-schema.org/draft-04/schema#"
# Methods that send every other request to the function, which answers 404 (unknown path) or 405
# (known path, other method, with Allow) in the error shape, instead of API Gateway's
# 403 "Missing Authentication Token".
CATCH_ALL = "ANY"

_ACCESS_LOG_FORMAT = apigw.AccessLogFormat.custom(
    json.dumps(
        {
            "requestId": "$context.requestId",
            "extendedRequestId": "$context.extendedRequestId",
            "requestTime": "$context.requestTimeEpoch",
            "httpMethod": "$context.httpMethod",
            "resourcePath": "$context.resourcePath",
            "status": "$context.status",
            "responseLength": "$context.responseLength",
            "integrationLatency": "$context.integrationLatency",
            "integrationStatus": "$context.integration.status",
            "errorMessage": "$context.error.message",
            "caller": "$context.identity.caller",
            "sourceIp": "$context.identity.sourceIp",
            "xrayTraceId": "$context.xrayTraceId",
        }
    )
)


class OrdersApi(Construct):
    """`api`: POST /orders (Idempotency-Key header + body model required) and
    GET /orders/{order_id}, both Lambda proxy to `handler`, and ANY on `/`, `/orders`,
    `/orders/{order_id}` and `/{proxy+}` to the same function (it answers 404/405); IAM auth
    unless `auth` is NONE."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api_name: str,
        stage_name: str,
        handler: lambda_.IFunction,
        auth: ApiAuth,
        throttle: ApiThrottle,
        retain_logs: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            log_group_name=f"/aws/apigateway/{api_name}/access",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.RETAIN if retain_logs else RemovalPolicy.DESTROY,
        )
        authorization = apigw.AuthorizationType.IAM if auth is ApiAuth.IAM else apigw.AuthorizationType.NONE
        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=api_name,
            description="retrysafe orders API",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Logging to CloudWatch needs the account-wide API Gateway CloudWatch role
            # (AWS::ApiGateway::Account), a setting of the account rather than of one app: set
            # it once per account and region (README, "Deploy to AWS").
            cloud_watch_role=False,
            default_method_options=apigw.MethodOptions(authorization_type=authorization),
            deploy_options=apigw.StageOptions(
                stage_name=stage_name,
                tracing_enabled=True,
                # Execution logs for errors only, never request or response bodies.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                throttling_rate_limit=throttle.rate,
                throttling_burst_limit=throttle.burst,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=_ACCESS_LOG_FORMAT,
            ),
        )
        # The stack publishes the URL as `ApiUrl` (DEVELOPERS.md); drop RestApi's own output.
        self.api.node.try_remove_child("Endpoint")
        for response_type, response in OPENAPI["x-amazon-apigateway-gateway-responses"].items():
            self._gateway_response(response_type, response)

        body_and_headers = self.api.add_request_validator(
            "BodyAndParams", validate_request_body=True, validate_request_parameters=True
        )
        params_only = self.api.add_request_validator(
            "ParamsOnly", validate_request_body=False, validate_request_parameters=True
        )
        create_order = self.api.add_model(
            "CreateOrderModel",
            content_type="application/json",
            model_name="CreateOrder",
            schema=apigw.JsonSchema(schema=apigw.JsonSchemaVersion.DRAFT4, type=apigw.JsonSchemaType.OBJECT),
        )
        # The schema is plain JSON Schema from the document (JsonSchema would mean retyping it).
        cast(apigw.CfnModel, create_order.node.default_child).add_property_override(
            "Schema",
            {"$schema": JSON_SCHEMA_DRAFT4, **OPENAPI["components"]["schemas"]["CreateOrderRequest"]},
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)

        orders = self.api.root.add_resource("orders")
        order = orders.add_resource("{order_id}")
        self.post_order = orders.add_method(
            "POST",
            integration,
            request_validator=body_and_headers,
            request_parameters={f"method.request.header.{IDEMPOTENCY_HEADER}": True},
            request_models={"application/json": create_order},
        )
        self.get_order = order.add_method(
            "GET",
            integration,
            request_validator=params_only,
            request_parameters={"method.request.path.order_id": True},
        )
        self.catch_all = [
            resource.add_method(CATCH_ALL, integration)
            for resource in (self.api.root, orders, order, self.api.root.add_resource("{proxy+}"))
        ]
        self._acknowledge(auth)

    def _gateway_response(self, response_type: str, response: dict[str, Any]) -> None:
        """One of API Gateway's own answers, in the error shape. The DEFAULT_* ones keep each
        type's own status (a throttle stays 429, a timeout 504): only their body is set."""
        default = response_type.startswith("DEFAULT_")
        self.api.add_gateway_response(
            response_type.title().replace("_", ""),
            type=apigw.ResponseType.of(response_type),
            status_code=None if default else str(response["statusCode"]),
            templates=response["responseTemplates"],
            response_headers={
                name.removeprefix("gatewayresponse.header."): value
                for name, value in response.get("responseParameters", {}).items()
            }
            or None,
        )

    def _acknowledge(self, auth: ApiAuth) -> None:
        stage = self.api.deployment_stage
        acknowledge(
            stage,
            "APIG3",
            "No WAF web ACL in the reference app: every method needs SigV4 (IAM) on AWS, the stage "
            "is throttled, and bodies are schema-validated; attach a WAF ACL per account policy.",
        )
        for method in (self.post_order, self.get_order, *self.catch_all):
            acknowledge(
                method,
                "COG4",
                "Callers are services signing with SigV4 (IAM authorization), not Cognito users.",
            )
            if auth is ApiAuth.NONE:
                acknowledge(
                    method,
                    "APIG4",
                    "Stage `local` only: the offline local cloud has no IAM; the stage config "
                    "(api_auth) keeps IAM on every AWS stage.",
                )
