"""A REST API as its CloudFormation template describes it: routes, models, validators, gateway
responses and the stage's throttle (`apis_from_template`), and which route a request takes
(`find_route`). `localcloud.apigw` serves it over HTTP; the simulator builds its proxy events
from the same routes (`simulator.events.rest_event`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("emulator.apigw_template")

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Route:
    resource_path: str
    resource_id: str
    method: str
    integration: str  # AWS_PROXY or MOCK
    function: str | None = None
    mock_status: int = 200
    mock_headers: dict[str, str] = field(default_factory=dict)
    required_params: tuple[str, ...] = ()  # "header.X", "querystring.X", "path.X"
    validate_params: bool = False
    validate_body: bool = False
    models: dict[str, dict[str, Any]] = field(default_factory=dict)  # content type -> JSON schema

    @property
    def segments(self) -> list[str]:
        return [part for part in self.resource_path.split("/") if part]

    def match(self, parts: list[str]) -> tuple[tuple[int, int, int], dict[str, str]] | None:
        """Specificity (literal segments, single params, not greedy) and path parameters."""
        segments = self.segments
        params: dict[str, str] = {}
        literal = single = 0
        for index, segment in enumerate(segments):
            if segment.startswith("{") and segment.endswith("+}"):
                rest = parts[index:]
                if not rest or index != len(segments) - 1:
                    return None
                params[segment[1:-2]] = "/".join(rest)
                return (literal, single, 0), params
            if index >= len(parts):
                return None
            if segment.startswith("{") and segment.endswith("}"):
                params[segment[1:-1]] = parts[index]
                single += 1
            elif segment != parts[index]:
                return None
            else:
                literal += 1
        if len(parts) != len(segments):
            return None
        return (literal, single, 1), params


def find_route(routes: Iterable[Route], method: str, parts: list[str]) -> tuple[Route, dict[str, str]] | None:
    """The most specific resource that matches `parts` (the path's segments), then its exact
    method before ANY; with the path parameters."""
    best: tuple[tuple[tuple[int, int, int], int], Route, dict[str, str]] | None = None
    for route in routes:
        matched = route.match(parts)
        if matched is None or not (
            route.method == method or (route.method == "ANY" and method in HTTP_METHODS)
        ):
            continue
        score, params = matched
        rank = (score, 1 if route.method == method else 0)
        if best is None or rank > best[0]:
            best = (rank, route, params)
    return (best[1], best[2]) if best else None


@dataclass(frozen=True)
class GatewayResponse:
    status: int | None
    templates: dict[str, str]
    headers: dict[str, str]


@dataclass(frozen=True)
class Throttle:
    """The stage's steady rate (requests/s) and burst (the bucket's size)."""

    rate: float
    burst: int


@dataclass(frozen=True)
class RestApiSpec:
    api_id: str
    name: str
    stage: str
    routes: tuple[Route, ...]
    gateway_responses: dict[str, GatewayResponse]
    throttle: Throttle | None = None


# -- reading the template ------------------------------------------------------------------------
def _ref(value: Any) -> str | None:
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return str(target[0] if isinstance(target, list) else target.split(".")[0])
    return None


def _walk(value: Any) -> Iterable[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def static_value(value: str) -> str:
    """'value' (a static mapping value) -> value."""
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value


def _inline_refs(schema: Any, models: dict[str, Any], depth: int = 0) -> Any:
    """Replace `$ref: .../models/Name` with that model's schema (API Gateway's model references)."""
    if depth > 10:
        return schema
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and "/models/" in ref:
            name = ref.rsplit("/", 1)[-1]
            if name in models:
                return _inline_refs(models[name], models, depth + 1)
        return {key: _inline_refs(value, models, depth) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inline_refs(item, models, depth) for item in schema]
    return schema


def _resource_path(logical: str | None, resources: dict[str, Any], api_logical: str) -> str:
    parts: list[str] = []
    seen = 0
    while logical and logical != api_logical and logical in resources and seen < 64:
        props = resources[logical]["Properties"]
        parts.append(str(props["PathPart"]))
        logical = _ref(props.get("ParentId"))
        seen += 1
    return "/" + "/".join(reversed(parts))


def apis_from_template(
    template: dict[str, Any],
    *,
    physical_ids: dict[str, str],
    function_names: dict[str, str],
) -> list[RestApiSpec]:
    """The REST APIs in one deployed template.

    `physical_ids`: logical id -> physical id (DescribeStackResources); `function_names`:
    logical id of each AWS::Lambda::Function -> its deployed name.
    """
    resources: dict[str, Any] = template.get("Resources", {})
    by_type: dict[str, dict[str, Any]] = {}
    for logical, resource in resources.items():
        by_type.setdefault(resource.get("Type", ""), {})[logical] = resource
    specs = []
    for api_logical, api in by_type.get("AWS::ApiGateway::RestApi", {}).items():

        def belongs(resource: dict[str, Any], api_logical: str = api_logical) -> bool:
            return _ref(resource.get("Properties", {}).get("RestApiId")) == api_logical

        api_resources = {k: v for k, v in by_type.get("AWS::ApiGateway::Resource", {}).items() if belongs(v)}
        raw_models = {k: v for k, v in by_type.get("AWS::ApiGateway::Model", {}).items() if belongs(v)}
        model_names = {
            str(v["Properties"].get("Name") or physical_ids.get(k, k)): v["Properties"].get("Schema", {})
            for k, v in raw_models.items()
        }
        validators = {
            k: v["Properties"] for k, v in by_type.get("AWS::ApiGateway::RequestValidator", {}).items()
        }
        stage_props = [
            v["Properties"] for v in by_type.get("AWS::ApiGateway::Stage", {}).values() if belongs(v)
        ]
        stages = [str(props["StageName"]) for props in stage_props if "StageName" in props]
        throttles = [
            Throttle(rate=float(setting["ThrottlingRateLimit"]), burst=int(setting["ThrottlingBurstLimit"]))
            for props in stage_props
            for setting in props.get("MethodSettings") or []
            if setting.get("ResourcePath") == "/*"
            and setting.get("HttpMethod") == "*"
            and "ThrottlingRateLimit" in setting
            and "ThrottlingBurstLimit" in setting
        ]
        stages += [
            str(v["Properties"]["StageName"])
            for v in by_type.get("AWS::ApiGateway::Deployment", {}).values()
            if belongs(v) and "StageName" in v.get("Properties", {})
        ]
        routes = []
        for method in by_type.get("AWS::ApiGateway::Method", {}).values():
            if not belongs(method):
                continue
            props = method["Properties"]
            resource_logical = _ref(props.get("ResourceId"))
            path = _resource_path(resource_logical, api_resources, api_logical)
            resource_id = physical_ids.get(resource_logical or "", resource_logical or "")
            integration = props.get("Integration", {})
            kind = str(integration.get("Type", "MOCK"))
            function = None
            for node in _walk(integration.get("Uri")):
                target = _ref(node)
                if target in function_names:
                    function = function_names[target]
                    break
            validator = validators.get(_ref(props.get("RequestValidatorId")) or "", {})
            models = {}
            for content_type, model_ref in (props.get("RequestModels") or {}).items():
                model_logical = _ref(model_ref)
                if model_logical in raw_models:
                    schema = raw_models[model_logical]["Properties"].get("Schema", {})
                    models[content_type] = _inline_refs(schema, model_names)
            required = tuple(
                key.removeprefix("method.request.")
                for key, needed in (props.get("RequestParameters") or {}).items()
                if needed is True or str(needed).lower() == "true"
            )
            mock_status, mock_headers = 200, {}
            if kind == "MOCK":
                responses = integration.get("IntegrationResponses") or [{}]
                mock_status = int(responses[0].get("StatusCode", 200))
                mock_headers = {
                    key.removeprefix("method.response.header."): static_value(str(value))
                    for key, value in (responses[0].get("ResponseParameters") or {}).items()
                }
            routes.append(
                Route(
                    resource_path=path,
                    resource_id=resource_id,
                    method=str(props.get("HttpMethod", "ANY")).upper(),
                    integration=kind,
                    function=function,
                    mock_status=mock_status,
                    mock_headers=mock_headers,
                    required_params=required,
                    validate_params=bool(validator.get("ValidateRequestParameters")),
                    validate_body=bool(validator.get("ValidateRequestBody")),
                    models=models,
                )
            )
        gateway_responses = {}
        for response in by_type.get("AWS::ApiGateway::GatewayResponse", {}).values():
            if not belongs(response):
                continue
            props = response["Properties"]
            gateway_responses[str(props["ResponseType"])] = GatewayResponse(
                status=int(props["StatusCode"]) if props.get("StatusCode") else None,
                templates=dict(props.get("ResponseTemplates") or {}),
                headers={
                    key.removeprefix("gatewayresponse.header."): str(value)
                    for key, value in (props.get("ResponseParameters") or {}).items()
                    if key.startswith("gatewayresponse.header.")
                },
            )
        specs.append(
            RestApiSpec(
                api_id=physical_ids.get(api_logical, api_logical),
                name=str(api.get("Properties", {}).get("Name", api_logical)),
                stage=stages[0] if stages else "prod",
                routes=tuple(routes),
                gateway_responses=gateway_responses,
                throttle=throttles[0] if throttles else None,
            )
        )
    return specs
