"""The orders REST API: two routes to one Lambda proxy, validated at the edge."""

from __future__ import annotations

import json

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import ApiAuth, ApiThrottle
from infra.nag import acknowledge

IDEMPOTENCY_HEADER = "Idempotency-Key"

# The POST /orders body contract (orders.contract in functions/ enforces the same shape).
CREATE_ORDER_SCHEMA = apigw.JsonSchema(
    schema=apigw.JsonSchemaVersion.DRAFT4,
    title="CreateOrder",
    type=apigw.JsonSchemaType.OBJECT,
    required=["customer_id", "currency", "items"],
    additional_properties=False,
    properties={
        "customer_id": apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, min_length=1, max_length=64),
        "currency": apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, pattern="^[A-Z]{3}$"),
        "items": apigw.JsonSchema(
            type=apigw.JsonSchemaType.ARRAY,
            min_items=1,
            max_items=50,
            items=apigw.JsonSchema(
                type=apigw.JsonSchemaType.OBJECT,
                required=["sku", "quantity"],
                additional_properties=False,
                properties={
                    "sku": apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, min_length=1, max_length=64),
                    "quantity": apigw.JsonSchema(type=apigw.JsonSchemaType.INTEGER, minimum=1, maximum=100),
                },
            ),
        ),
    },
)

# Edge rejections answer in the function's error shape and with the code the function itself
# gives for the same fault, so a client sees one answer whether the edge or the code refused.
# The body model cannot tell a body that is not JSON (MalformedBody in the function) from JSON
# outside the contract (InvalidRequest): both are the same "invalid request body" at the edge.
# The only required request parameter is the Idempotency-Key header (the path parameter always
# exists on a matched route).
_ERROR_RESPONSES = {
    "BadRequestParameters": (apigw.ResponseType.BAD_REQUEST_PARAMETERS, "IdempotencyKeyMissing"),
    "BadRequestBody": (apigw.ResponseType.BAD_REQUEST_BODY, "InvalidRequest"),
}

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
    GET /orders/{order_id}, both Lambda proxy to `handler`; IAM auth unless `auth` is NONE."""

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
        for construct_id_, (response_type, error) in _ERROR_RESPONSES.items():
            self.api.add_gateway_response(
                construct_id_,
                type=response_type,
                status_code="400",
                templates={
                    "application/json": f'{{"error": "{error}", "message": $context.error.messageString}}'
                },
            )

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
            schema=CREATE_ORDER_SCHEMA,
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)

        orders = self.api.root.add_resource("orders")
        self.post_order = orders.add_method(
            "POST",
            integration,
            request_validator=body_and_headers,
            request_parameters={f"method.request.header.{IDEMPOTENCY_HEADER}": True},
            request_models={"application/json": create_order},
        )
        self.get_order = orders.add_resource("{order_id}").add_method(
            "GET",
            integration,
            request_validator=params_only,
            request_parameters={"method.request.path.order_id": True},
        )
        self._acknowledge(auth)

    def _acknowledge(self, auth: ApiAuth) -> None:
        stage = self.api.deployment_stage
        acknowledge(
            stage,
            "APIG3",
            "No WAF web ACL in the reference app: every method needs SigV4 (IAM) on AWS, the stage "
            "is throttled, and bodies are schema-validated; attach a WAF ACL per account policy.",
        )
        for method in (self.post_order, self.get_order):
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
