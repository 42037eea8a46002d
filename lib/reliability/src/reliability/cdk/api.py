"""A service's REST API built from its published OpenAPI document: every operation as a Lambda
proxy, validated at the edge (required parameters, the JSON body's model); every other path and
method reaches the function too (404/405), and every answer of the gateway's own
(`x-amazon-apigateway-gateway-responses`) is in the service's error shape.

The document is read as data, never imported: the edge's resources, methods, required parameters,
body models and API Gateway's own error answers come from it, so the edge, the function and the
document agree."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from reliability.cdk.api_model import model_schema
from reliability.cdk.config import ApiAuth, ApiThrottle
from reliability.cdk.log_group import log_group
from reliability.cdk.nag import acknowledge, acknowledge_checkov

# Methods that send every other request to the function, which answers 404 (unknown path) or 405
# (known path, other method, with Allow) in the error shape, instead of API Gateway's
# 403 "Missing Authentication Token". ANY covers the seven methods API Gateway routes; any other
# (TRACE, ...) still gets that 403.
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


class OpenApiRestApi(Construct):
    """`api`: each operation of `document` (its required parameters and JSON body model
    validated) as a Lambda proxy to `handler`, and ANY on `/`, every resource of the document and
    `/{proxy+}` to the same function (it answers 404/405); IAM auth unless `auth` is NONE.
    `no_cache_reason` says why the stage has no cache (what its routes need of the function)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        document: Mapping[str, Any],
        api_name: str,
        description: str,
        no_cache_reason: str,
        stage_name: str,
        handler: lambda_.IFunction,
        auth: ApiAuth,
        throttle: ApiThrottle,
        retain_logs: bool,
        log_key: kms.IKey | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._document = document
        self.access_logs = log_group(
            self, "AccessLogs", name=f"/aws/apigateway/{api_name}/access", retain=retain_logs, key=log_key
        )
        authorization = apigw.AuthorizationType.IAM if auth is ApiAuth.IAM else apigw.AuthorizationType.NONE
        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=api_name,
            description=description,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Logging to CloudWatch needs the account-wide API Gateway CloudWatch role
            # (AWS::ApiGateway::Account), a setting of the account rather than of one app: set
            # it once per account and region (docs/deploying.md, "Deploy: AWS, LocalStack, the local cloud").
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
        # The stack publishes the URL as `ApiUrl` (ops tools read it); drop RestApi's own output.
        self.api.node.try_remove_child("Endpoint")
        for response_type, response in document["x-amazon-apigateway-gateway-responses"].items():
            self._gateway_response(response_type, response)

        self._body_and_params = self.api.add_request_validator(
            "BodyAndParams", validate_request_body=True, validate_request_parameters=True
        )
        self._params_only = self.api.add_request_validator(
            "ParamsOnly", validate_request_body=False, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)
        self._resources: dict[str, apigw.IResource] = {"": self.api.root}
        self._models: dict[str, apigw.IModel] = {}
        self.operations = [
            self._operation(self._resource(path), method.upper(), operation, integration)
            for path, operations in document["paths"].items()
            for method, operation in operations.items()
        ]
        self.catch_all = [
            resource.add_method(CATCH_ALL, integration)
            for resource in (*self._resources.values(), self.api.root.add_resource("{proxy+}"))
        ]
        self._acknowledge(auth, no_cache_reason)

    def _resource(self, path: str) -> apigw.IResource:
        """The resource of a document path (`/things/{thing_id}`), its parents created first."""
        path = path.rstrip("/")
        if path not in self._resources:
            parent, _, part = path.rpartition("/")
            self._resources[path] = self._resource(parent).add_resource(part)
        return self._resources[path]

    def _operation(
        self,
        resource: apigw.IResource,
        method: str,
        operation: dict[str, Any],
        integration: apigw.Integration,
    ) -> apigw.Method:
        """One documented operation: its required parameters, and its JSON body's model."""
        parameters = {
            f"method.request.{parameter['in']}.{parameter['name']}": bool(parameter["required"])
            for parameter in operation.get("parameters", [])
        }
        body = operation.get("requestBody")
        if body is None:
            return resource.add_method(
                method, integration, request_validator=self._params_only, request_parameters=parameters
            )
        schema_name = body["content"]["application/json"]["schema"]["$ref"].rpartition("/")[2]
        return resource.add_method(
            method,
            integration,
            request_validator=self._body_and_params,
            request_parameters=parameters,
            request_models={"application/json": self._model(schema_name)},
        )

    def _model(self, schema_name: str) -> apigw.IModel:
        """The API's model of a document schema, made once: routes that take the same body share it."""
        if schema_name not in self._models:
            model_name = schema_name.removesuffix("Request")
            model = self.api.add_model(
                f"{model_name}Model",
                content_type="application/json",
                model_name=model_name,
                schema=apigw.JsonSchema(
                    schema=apigw.JsonSchemaVersion.DRAFT4, type=apigw.JsonSchemaType.OBJECT
                ),
            )
            # The schema is the document's, in draft 4's words (JsonSchema would mean retyping it).
            cast(apigw.CfnModel, model.node.default_child).add_property_override(
                "Schema", model_schema(self._document["components"]["schemas"][schema_name])
            )
            self._models[schema_name] = model
        return self._models[schema_name]

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

    def _acknowledge(self, auth: ApiAuth, no_cache_reason: str) -> None:
        stage = self.api.deployment_stage
        acknowledge(
            stage,
            "APIG3",
            "No WAF web ACL in the reference app: every method needs SigV4 (IAM) on AWS, the stage "
            "is throttled, and bodies are schema-validated; attach a WAF ACL per account policy.",
        )
        acknowledge_checkov(stage, "CKV_AWS_120", no_cache_reason)
        no_auth = (
            "Stage `local` only: the offline local cloud has no IAM; the stage config "
            "(api_auth) keeps IAM on every AWS stage."
        )
        for method in (*self.operations, *self.catch_all):
            acknowledge(
                method,
                "COG4",
                "Callers are services signing with SigV4 (IAM authorization), not Cognito users.",
            )
            if auth is ApiAuth.NONE:
                acknowledge(method, "APIG4", no_auth)
                acknowledge_checkov(method, "CKV_AWS_59", no_auth)
