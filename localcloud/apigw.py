"""The REST API served over HTTP, as API Gateway serves a Lambda proxy API.

moto creates the RestApi, Resources and Methods but cannot invoke an AWS_PROXY integration, and it
skips RequestValidator, Model, GatewayResponse and Stage. So the routes, validators, models and
gateway responses are read from the deployed template (CloudFormation GetTemplate plus
DescribeStackResources for the physical ids) and served here: request validation with API
Gateway's 400s, the REST proxy event, the Lambda call through the local endpoint (so the same worker
pool runs it), and the proxy response mapped back to HTTP. MOCK integrations (CORS preflight) answer
from their integration response. The stage's throttle (its `*/*` method setting) is a token bucket
answering THROTTLED (429). Every answer of the edge's own goes through the API's gateway responses,
also for what a client can break (a body nested past the recursion limit, a bad Content-Length, a
malformed request line, an unknown method): a client's input never gets a 500. The event's
`domainName` is the address this server was started on, never the request's `Host`.
Authorizers and binary media types are not emulated.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema

from localcloud.shapes import rest_proxy_event

logger = logging.getLogger("localcloud.apigw")

# API Gateway's built-in gateway responses used here: (status, x-amzn-ErrorType).
DEFAULT_RESPONSES: dict[str, tuple[int, str]] = {
    "MISSING_AUTHENTICATION_TOKEN": (403, "MissingAuthenticationTokenException"),
    "BAD_REQUEST_PARAMETERS": (400, "BadRequestException"),
    "BAD_REQUEST_BODY": (400, "BadRequestException"),
    "REQUEST_TOO_LARGE": (413, "RequestTooLargeException"),
    "THROTTLED": (429, "TooManyRequestsException"),
    "DEFAULT_4XX": (400, "BadRequestException"),
    "INTEGRATION_FAILURE": (504, "InternalServerErrorException"),
    "INTEGRATION_TIMEOUT": (504, "InternalServerErrorException"),
    "DEFAULT_5XX": (502, "InternalServerErrorException"),
}
DEFAULT_TEMPLATE = '{"message":$context.error.messageString}'
MAX_BODY_BYTES = 10 * 1024 * 1024
# Connections the kernel queues before the server accepts them. http.server's default is 5, so a
# burst of 20 clients opening connections at once got resets; werkzeug's 128 (the AWS endpoint's).
LISTEN_BACKLOG = 128
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


class TokenBucket:
    """API Gateway's throttle: `burst` tokens, refilled at `rate` per second; thread-safe."""

    def __init__(self, throttle: Throttle, clock: Callable[[], float] = time.monotonic) -> None:
        self._throttle = throttle
        self._clock = clock
        self._tokens = float(throttle.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(
                float(self._throttle.burst), self._tokens + (now - self._at) * self._throttle.rate
            )
            self._at = now
            if self._tokens < 1:
                return False
            self._tokens -= 1
            return True


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


def _literal(value: str) -> str:
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
                    key.removeprefix("method.response.header."): _literal(str(value))
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


# -- serving -----------------------------------------------------------------------------------
@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"
    host: str = "127.0.0.1"

    def header(self, name: str) -> str | None:
        found = [value for key, value in self.headers if key.lower() == name.lower()]
        return found[-1] if found else None


Invoker = Callable[[str, dict[str, Any]], tuple[Any, str | None]]
"""(function name, event) -> (decoded payload, FunctionError or None)."""


class RestApiHandler:
    """Turns one HTTP request into what API Gateway would answer; no sockets, easy to test."""

    def __init__(self, spec: RestApiSpec, *, invoke: Invoker, account_id: str, region: str) -> None:
        self.spec = spec
        self._invoke = invoke
        self._account_id = account_id
        self._region = region
        self._bucket = TokenBucket(spec.throttle) if spec.throttle else None

    def refusal(self, status: int, message: str) -> HttpResponse:
        """What the edge answers for a request it cannot even read (a malformed request line, a
        bad Content-Length): the DEFAULT_4XX/5XX gateway response with that status."""
        response_type = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        return self._gateway_response(response_type, str(uuid.uuid4()), message, status=status)

    def too_large(self) -> HttpResponse:
        return self._gateway_response("REQUEST_TOO_LARGE", str(uuid.uuid4()), "Request Too Long")

    def failure(self) -> HttpResponse:
        """An error of the emulation itself: API Gateway's DEFAULT_5XX, never a bare 500."""
        return self._gateway_response("DEFAULT_5XX", str(uuid.uuid4()), "Internal server error")

    def _gateway_response(
        self,
        response_type: str,
        request_id: str,
        message: str,
        *,
        validation: str = "",
        status: int | None = None,
    ) -> HttpResponse:
        default_status, error_type = DEFAULT_RESPONSES.get(
            response_type, (500, "InternalServerErrorException")
        )
        custom = self.spec.gateway_responses.get(response_type) or self.spec.gateway_responses.get(
            "DEFAULT_4XX" if (status or default_status) < 500 else "DEFAULT_5XX"
        )
        if status is None:
            status = (custom.status if custom is not None else None) or default_status
        template = DEFAULT_TEMPLATE
        headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", error_type)]
        if custom is not None:
            template = custom.templates.get("application/json", template)
            headers += [(name, _literal(value)) for name, value in custom.headers.items()]
        context = {
            "error.messageString": json.dumps(message),
            "error.message": message,
            "error.validationErrorString": validation,
            "error.responseType": response_type,
            "requestId": request_id,
            "stage": self.spec.stage,
            "apiId": self.spec.api_id,
        }

        def substitute(match: re.Match[str]) -> str:
            return context.get(match.group(1) or match.group(2), "")

        body = re.sub(
            r"\$\{context\.([A-Za-z.]+)\}|\$context\.([A-Za-z]+(?:\.[A-Za-z]+)*)", substitute, template
        )
        headers.append(("x-amzn-RequestId", request_id))
        return HttpResponse(status, headers, body.encode("utf-8"))

    def _find(self, method: str, parts: list[str]) -> tuple[Route, dict[str, str]] | None:
        """The most specific resource that matches, then its exact method before ANY."""
        best: tuple[tuple[tuple[int, int, int], int], Route, dict[str, str]] | None = None
        for route in self.spec.routes:
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

    def _validate(self, route: Route, request: HttpRequest, request_id: str) -> HttpResponse | None:
        query = parse_qs(request.query, keep_blank_values=True)
        if route.validate_params and route.required_params:
            missing = []
            for param in route.required_params:
                where, _, name = param.partition(".")
                if (where == "header" and request.header(name) is None) or (
                    where == "querystring" and name not in query
                ):
                    missing.append(name)
            if missing:
                message = f"Missing required request parameters: [{', '.join(missing)}]"
                return self._gateway_response(
                    "BAD_REQUEST_PARAMETERS", request_id, message, validation=message
                )
        if route.validate_body and route.models:
            content_type = (
                (request.header("Content-Type") or "application/json").split(";")[0].strip().lower()
            )
            schema = route.models.get(content_type, route.models.get("$default"))
            if schema is not None:
                try:
                    document = json.loads(request.body) if request.body.strip() else {}
                    validator = jsonschema.Draft4Validator(schema)
                    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
                except (ValueError, RecursionError):  # not JSON, or nested past the recursion limit
                    return self._gateway_response(
                        "BAD_REQUEST_BODY", request_id, "Invalid request body", validation="[Invalid JSON]"
                    )
                if errors:
                    detail = "[" + ", ".join(_describe(error) for error in errors) + "]"
                    return self._gateway_response(
                        "BAD_REQUEST_BODY", request_id, "Invalid request body", validation=detail
                    )
        return None

    def event(
        self, route: Route, params: dict[str, str], request: HttpRequest, request_id: str
    ) -> dict[str, Any]:
        """The REST API (payload format 1.0) proxy event (`localcloud.shapes`)."""
        own = {"x-forwarded-proto", "x-forwarded-port"}
        client = [(name, value) for name, value in request.headers if name.lower() not in own]
        try:
            body: str | None = request.body.decode("utf-8") if request.body else None
            is_base64 = False
        except UnicodeDecodeError:
            body, is_base64 = base64.b64encode(request.body).decode("ascii"), True
        return rest_proxy_event(
            method=request.method,
            path=request.path,
            resource_path=route.resource_path,
            resource_id=route.resource_id,
            headers=[*client, *self._forwarded(request)],
            query=parse_qs(request.query, keep_blank_values=True),
            path_parameters=params,
            body=body,
            is_base64=is_base64,
            stage=self.spec.stage,
            api_id=self.spec.api_id,
            account_id=self._account_id,
            request_id=request_id,
            host=request.host,
            source_ip=request.source_ip,
            user_agent=request.header("User-Agent"),
        )

    @staticmethod
    def _forwarded(request: HttpRequest) -> list[tuple[str, str]]:
        """The headers API Gateway adds to every proxied request (here the scheme is http); the
        port and scheme are the edge's own, whatever the client sent."""
        present = {name.lower() for name, _ in request.headers}
        added = {
            "X-Forwarded-For": request.source_ip,
            "X-Amzn-Trace-Id": f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}",
        }
        own = {
            "X-Forwarded-Port": request.host.rpartition(":")[2] if ":" in request.host else "80",
            "X-Forwarded-Proto": "http",
        }
        return [(name, value) for name, value in added.items() if name.lower() not in present] + list(
            own.items()
        )

    def handle(self, request: HttpRequest) -> HttpResponse:  # noqa: PLR0911 - one return per outcome
        request_id = str(uuid.uuid4())
        parts = [unquote(part) for part in request.path.split("/") if part]
        if not parts or parts[0] != self.spec.stage:
            return self._gateway_response(
                "MISSING_AUTHENTICATION_TOKEN", request_id, "Missing Authentication Token"
            )
        if self._bucket is not None and not self._bucket.take():
            return self._gateway_response("THROTTLED", request_id, "Too Many Requests")
        resource_parts = parts[1:]
        request = HttpRequest(
            method=request.method,
            path="/" + "/".join(request.path.split("/")[2:]),
            query=request.query,
            headers=request.headers,
            body=request.body,
            source_ip=request.source_ip,
            host=request.host,
        )
        found = self._find(request.method, resource_parts)
        if found is None:
            return self._gateway_response(
                "MISSING_AUTHENTICATION_TOKEN", request_id, "Missing Authentication Token"
            )
        route, params = found
        invalid = self._validate(route, request, request_id)
        if invalid is not None:
            return invalid
        if route.integration == "MOCK":
            headers = [*route.mock_headers.items(), ("x-amzn-RequestId", request_id)]
            return HttpResponse(route.mock_status, headers, b"")
        if route.integration != "AWS_PROXY" or route.function is None:
            logger.warning(
                "%s %s: integration %s is not served locally",
                route.method,
                route.resource_path,
                route.integration,
            )
            return self._gateway_response("DEFAULT_5XX", request_id, "Internal server error")
        payload, function_error = self._invoke(route.function, self.event(route, params, request, request_id))
        if function_error:
            if isinstance(payload, dict) and payload.get("errorType") == "Sandbox.Timedout":
                return self._gateway_response("INTEGRATION_TIMEOUT", request_id, "Endpoint request timed out")
            return self._gateway_response("DEFAULT_5XX", request_id, "Internal server error")
        return self._proxy_response(payload, request_id)

    def _proxy_response(self, payload: Any, request_id: str) -> HttpResponse:
        if not isinstance(payload, dict):
            return self._gateway_response("DEFAULT_5XX", request_id, "Internal server error")
        try:
            status = int(payload.get("statusCode", 200))
        except (TypeError, ValueError):
            return self._gateway_response("DEFAULT_5XX", request_id, "Internal server error")
        headers: list[tuple[str, str]] = []
        single = payload.get("headers") or {}
        multi = payload.get("multiValueHeaders") or {}
        if not isinstance(single, dict) or not isinstance(multi, dict):
            return self._gateway_response("DEFAULT_5XX", request_id, "Internal server error")
        for name, values in multi.items():
            headers += [(name, str(value)) for value in values]
        multi_names = {name.lower() for name in multi}
        headers += [(name, str(value)) for name, value in single.items() if name.lower() not in multi_names]
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("Content-Type", "application/json"))
        headers.append(("x-amzn-RequestId", request_id))
        body = payload.get("body")
        if body is None:
            data = b""
        elif payload.get("isBase64Encoded"):
            data = base64.b64decode(str(body))
        else:
            data = str(body).encode("utf-8")
        return HttpResponse(status, headers, data)


def _describe(error: jsonschema.ValidationError) -> str:
    where = "/" + "/".join(str(part) for part in error.absolute_path)
    return f"{error.message} (at {where})" if error.absolute_path else error.message


class _ApiHttpServer(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True


class _Request(BaseHTTPRequestHandler):
    """One request to a RestApiServer; each server subclasses it with its `rest` handler and
    `endpoint` (the stage's own `host:port`, never the client's Host header)."""

    protocol_version = "HTTP/1.1"
    rest: RestApiHandler
    endpoint: str

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def __getattr__(self, name: str) -> Any:
        # Any method name reaches _serve (http.server answers an unknown one with its own
        # HTML 501); the routes decide, as API Gateway does.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def send_error(
        self,
        code: int,
        message: str | None = None,
        explain: str | None = None,  # noqa: ARG002 - http.server's signature
    ) -> None:
        """http.server's own refusals (malformed request line, headers too long) in the
        API's gateway response shape instead of an HTML page."""
        self.close_connection = True
        self._answer(self.rest.refusal(code, message or HTTPStatus(code).phrase))

    def _answer(self, response: HttpResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._answer(self.rest.refusal(400, "Invalid Content-Length"))
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            self._answer(self.rest.too_large())
            return
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        request = HttpRequest(
            method=self.command,
            path=url.path,
            query=url.query,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            host=self.endpoint,
        )
        try:
            response = self.rest.handle(request)
        except Exception:  # one broken request must not stop the API
            logger.exception("request %s %s failed", self.command, self.path)
            response = self.rest.failure()
        self._answer(response)


class RestApiServer:
    """One REST API on one 127.0.0.1 port, served by a thread per request."""

    def __init__(self, handler: RestApiHandler, *, port: int, host: str = "127.0.0.1") -> None:
        self.handler = handler

        class Request(_Request):
            rest = handler

        self._server = _ApiHttpServer((host, port), Request)
        self.port = int(self._server.server_address[1])
        Request.endpoint = f"{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"rest-api-{self.port}", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.handler.spec.stage}/"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
