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
Authorizers and binary media types are not emulated. The API is read from the template by
`emulator.apigw_template`; the sockets are `localcloud.apigw_server`'s.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

import jsonschema

from emulator.apigw_template import RestApiSpec, Route, Throttle, find_route, static_value
from emulator.shapes import rest_proxy_event

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
            headers += [(name, static_value(value)) for name, value in custom.headers.items()]
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
        """The REST API (payload format 1.0) proxy event (`emulator.shapes`)."""
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
        found = find_route(self.spec.routes, request.method, resource_parts)
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
