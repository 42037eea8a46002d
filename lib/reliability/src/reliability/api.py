"""A service's REST API on one Lambda: the routes its declaration lists (`Service.routes`, each
served by its view), HTTP idempotency for a POST, and every error in one shape,
`{"error": <code>, "message": <text>}`, whatever the input: an unknown path is a 404, a known
path with another method a 405 (API Gateway sends both here through its catch-all methods), a
body that is not `application/json` a 415, a client's problem the status and code its
`RequestError` carries, a transient failure a 503 with Retry-After, anything else a 500.

`RestApi` is built once per service (its handler module's import, the cold start); its public
helpers are what a view needs of the request: `caller`, `headers`, `body`, `status_base`, and
`idempotent` for a POST that creates something (the key checked, the body parsed, the work run
once per key and payload, a replay answered the same).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.logging import correlation_paths

from reliability.errors import MalformedBody, RequestError, RetryableError
from reliability.http import HttpResponse, caller_of, header_value
from reliability.observability import logger, tracer
from reliability.telemetry import metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the modules are not loaded at run time
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from reliability.declaration import Route, Service
    from reliability.http import HttpIdempotency

JSON = "application/json"

E = TypeVar("E", bound=Exception)
ErrorHandler = Callable[[E], Response[str]]
Handler = Callable[[dict[str, Any], "LambdaContext"], dict[str, Any]]


class Request(Protocol):
    """A parsed request body (a pydantic model is one): its JSON form is the payload its
    idempotency key is bound to."""

    def model_dump(self, *, mode: str) -> Any: ...


class ApiRuntime(Protocol):
    def http_idempotency(self) -> HttpIdempotency:
        """A fresh one per invocation."""
        ...


M = TypeVar("M", bound=Request)


def json_response(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> Response[str]:
    return Response(status_code=status, content_type=JSON, body=json.dumps(body), headers=dict(headers or {}))


def error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Response[str]:
    """The one error shape."""
    return json_response(status, {"error": code, "message": message}, headers)


def from_http(response: HttpResponse) -> Response[str]:
    return json_response(response.status, response.body, dict(response.headers))


class RestApi:
    """The service's API: its declared routes, its error shape, the request helpers its views use."""

    def __init__(self, service: Service, *, runtime: Callable[[], ApiRuntime]) -> None:
        self.service = service
        self.runtime = runtime
        self.app = APIGatewayRestResolver()
        self._handler: Handler | None = None
        self.app.not_found(self._no_route)
        self._on(RequestError)(self._request_error)
        self._on(RetryableError)(self._retryable)
        self._on(Exception)(self._unexpected)

    # --- what a view needs of the request -----------------------------------------------------
    def caller(self) -> str:
        """Who sent the request (`reliability.http.caller_of`): it scopes the key and owns what it creates."""
        return caller_of(self.app.current_event.raw_event.get("requestContext"))

    def headers(self) -> Any:
        """Every header value (API Gateway's `multiValueHeaders`), so a repeated header is seen."""
        event = self.app.current_event
        return event.multi_value_headers or event.headers

    def body(self) -> str | bytes | None:
        """The raw body, base64-decoded where API Gateway encoded it; `MalformedBody` if it cannot be."""
        event = self.app.current_event
        if not event.is_base64_encoded or event.body is None:
            return event.body
        try:
            return base64.b64decode(event.body, validate=True)
        except (binascii.Error, ValueError) as refused:
            raise MalformedBody("the body is not valid base64") from refused

    def status_base(self) -> str:
        """`<scheme>://<domain>/<stage>` of the API itself, else "" (a path-only URL).

        The domain and stage come from API Gateway's request context (the API's own domain, which
        routed the request), never from a client's `Host`; the scheme is the one API Gateway
        forwards in `X-Forwarded-Proto` (https on AWS; http on a local cloud's REST API).
        """
        event = self.app.current_event
        context = event.request_context
        domain, stage = context.domain_name, context.stage
        scheme = (event.headers.get("X-Forwarded-Proto") or "https").split(",")[0].strip().lower()
        if scheme not in ("http", "https"):
            scheme = "https"
        return f"{scheme}://{domain}/{stage}" if domain and stage else ""

    def idempotent(
        self,
        route: str,
        *,
        parse: Callable[[str | bytes | None], M],
        execute: Callable[[M, str, str], HttpResponse],
        what: str = "the request",
    ) -> Response[str]:
        """A POST under HTTP idempotency: the Idempotency-Key checked first (a missing or refused
        key is its 400 before the body is read), then a JSON media type (415 otherwise: `what` to
        send), the body parsed (`parse`, raising a `RequestError`), and `execute(request,
        stored_key, caller)` run once per key and payload; a replay gets the first answer."""
        idempotency = self.runtime().http_idempotency()
        headers = self.headers()
        caller = self.caller()
        key = idempotency.checked_key(route=route, caller=caller, headers=headers)
        if isinstance(key, HttpResponse):
            return from_http(key)
        media_type = (header_value(headers, "Content-Type") or "").split(";")[0].strip().lower()
        if media_type != JSON:
            return error(415, "UnsupportedMediaType", f"send {what} as {JSON}")
        request = parse(self.body())
        return from_http(
            idempotency.handle(
                route=route,
                key=key,
                payload=request.model_dump(mode="json"),
                lambda_context=self.app.lambda_context,
                execute=lambda: execute(request, key.value, caller),
            )
        )

    # --- routes and errors --------------------------------------------------------------------
    def handler(self) -> Handler:
        """The Lambda handler, its declared routes registered (once: a view's module may be the
        handler module itself, so call this after its views are defined)."""
        if self._handler is None:
            for route in self.service.routes:
                self._register(route)

            @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
            @metrics_per_invocation
            @tracer.capture_lambda_handler(capture_response=False)
            def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
                return self.app.resolve(event, context)

            self._handler = handler
        return self._handler

    def _register(self, route: Route) -> None:
        """Serve `route` with its view: a model it returns is the success body, with the route's status."""
        module, _, name = route.view.partition(":")
        view = getattr(importlib.import_module(module), name)

        def answer(**path_parameters: str) -> Response[str]:
            result = view(**path_parameters)
            if isinstance(result, Response):
                return result
            return json_response(route.status, result.model_dump(mode="json"))

        self.app.route(re.sub(r"\{(\w+)\}", r"<\1>", route.path), route.method)(answer)

    def allowed_methods(self, path: str) -> list[str]:
        return sorted(
            route.method
            for route in self.service.routes
            if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", route.path), path.rstrip("/"))
        )

    def _no_route(self, _exc: Exception) -> Response[str]:
        event = self.app.current_event
        allowed = self.allowed_methods(event.path)
        if allowed:
            return error(
                405,
                "MethodNotAllowed",
                f"{event.http_method} is not allowed here; allowed: {', '.join(allowed)}",
                {"Allow": ", ".join(allowed)},
            )
        return error(404, "NotFound", "no such resource")

    def _on(self, kind: type[E]) -> Callable[[ErrorHandler[E]], ErrorHandler[E]]:
        """`app.exception_handler(kind)` with its type: Powertools leaves the decorator unannotated."""
        register: Callable[[ErrorHandler[E]], ErrorHandler[E]] = self.app.exception_handler(kind)
        return register

    @staticmethod
    def _request_error(refused: RequestError) -> Response[str]:
        return error(refused.status, refused.code, str(refused))

    @staticmethod
    def _retryable(failure: RetryableError) -> Response[str]:
        logger.info(
            "transient failure, asking the client to retry", extra={"error_type": type(failure).__name__}
        )
        return error(
            503,
            "ServiceUnavailable",
            "temporarily unavailable, retry with the same key",
            {"Retry-After": "1"},
        )

    @staticmethod
    def _unexpected(failure: Exception) -> Response[str]:
        logger.exception("unhandled error", extra={"error_type": type(failure).__name__})
        return error(500, "InternalError", "internal error; retry with the same Idempotency-Key")
