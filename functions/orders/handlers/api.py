"""The public API: `POST /orders` (HTTP idempotency) and `GET /orders/{order_id}`.

Domain exceptions become HTTP responses in ONE place (the exception handlers below); every
error body is `{"error": <code>, "message": <text>}`, whatever the input: an unknown path is a
404, a known path with another method a 405 (API Gateway sends both here through its catch-all
methods), a POST body that is not `application/json` a 415.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.logging import correlation_paths

# Every request builds the order service; orders.runtime imports it only where it builds it (for
# the kinds of function that never do), so this function imports it here, at init: its cold start.
import orders.service  # noqa: F401
from orders.config import ApiSettings
from orders.contract import parse_create_order
from orders.errors import MalformedBody, OrderError
from orders.handlers import init_done
from orders.observability import logger, tracer
from orders.runtime import current
from orders.workflow import ROUTES, Route
from reliability.errors import RetryableError
from reliability.http import HttpResponse, caller_of, header_value
from reliability.telemetry import metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import BaseModel

SETTINGS = ApiSettings
CREATE_ROUTE = next(route.name for route in ROUTES if route.view.endswith(":create_order"))
JSON = "application/json"

app = APIGatewayRestResolver()

E = TypeVar("E", bound=Exception)
ErrorHandler = Callable[[E], Response[str]]


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status_code=status, content_type=JSON, body=json.dumps(body), headers=headers or {})


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response[str]:
    return _json(status, {"error": code, "message": message}, headers)


def _from_http(response: HttpResponse) -> Response[str]:
    return _json(response.status, response.body, dict(response.headers))


def _status_base() -> str:
    """`<scheme>://<domain>/<stage>` of the API itself, else "" (a path-only status URL).

    The domain and stage come from API Gateway's request context (the API's own domain, which
    routed the request), never from a client's `Host`; the scheme is the one API Gateway forwards
    in `X-Forwarded-Proto` (https on AWS; http on the local cloud's REST API).
    """
    event = app.current_event
    context = event.request_context
    domain, stage = context.domain_name, context.stage
    scheme = (event.headers.get("X-Forwarded-Proto") or "https").split(",")[0].strip().lower()
    if scheme not in ("http", "https"):
        scheme = "https"
    return f"{scheme}://{domain}/{stage}" if domain and stage else ""


def caller() -> str:
    """Who sent the request (`reliability.http.caller_of`): it scopes the key and owns the order."""
    return caller_of(app.current_event.raw_event.get("requestContext"))


def _headers() -> Any:
    """Every header value (API Gateway's `multiValueHeaders`), so a repeated header is seen."""
    event = app.current_event
    return event.multi_value_headers or event.headers


def _body() -> str | bytes | None:
    event = app.current_event
    if not event.is_base64_encoded or event.body is None:
        return event.body
    try:
        return base64.b64decode(event.body, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedBody("the body is not valid base64") from error


def create_order() -> Response[str]:
    runtime = current(SETTINGS)
    idempotency = runtime.http_idempotency()
    headers = _headers()
    caller_id = caller()
    key = idempotency.checked_key(route=CREATE_ROUTE, caller=caller_id, headers=headers)
    if isinstance(key, HttpResponse):
        return _from_http(key)
    stored_key = key.value
    media_type = (header_value(headers, "Content-Type") or "").split(";")[0].strip().lower()
    if media_type != JSON:
        return _error(415, "UnsupportedMediaType", f"send the order as {JSON}")
    request = parse_create_order(_body())

    def execute() -> HttpResponse:
        accepted = runtime.order_service.place(
            request, stored_key=stored_key, owner=caller_id, status_base=_status_base()
        )
        return HttpResponse(status=202, body=accepted.model_dump(mode="json"))

    return _from_http(
        idempotency.handle(
            route=CREATE_ROUTE,
            key=key,
            payload=request.model_dump(mode="json"),
            lambda_context=app.lambda_context,
            execute=execute,
        )
    )


def get_order(order_id: str) -> BaseModel:
    return current(SETTINGS).order_service.view(order_id, caller=caller())


def _register(route: Route) -> None:
    """Serve `route` with its view: a model it returns is the success body, with the route's status."""
    module, _, name = route.view.partition(":")
    view = getattr(importlib.import_module(module), name)

    def answer(**path_parameters: str) -> Response[str]:
        result = view(**path_parameters)
        if isinstance(result, Response):
            return result
        return _json(route.status, result.model_dump(mode="json"))

    app.route(re.sub(r"\{(\w+)\}", r"<\1>", route.path), route.method)(answer)


# The views of this module are defined above: orders.workflow.ROUTES may name them.
for _route in ROUTES:
    _register(_route)


def _allowed_methods(path: str) -> list[str]:
    return sorted(
        route.method
        for route in ROUTES
        if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", route.path), path.rstrip("/"))
    )


@app.not_found
def _no_route(_exc: Exception) -> Response[str]:
    event = app.current_event
    allowed = _allowed_methods(event.path)
    if allowed:
        return _error(
            405,
            "MethodNotAllowed",
            f"{event.http_method} is not allowed here; allowed: {', '.join(allowed)}",
            {"Allow": ", ".join(allowed)},
        )
    return _error(404, "NotFound", "no such resource")


def _on(error: type[E]) -> Callable[[ErrorHandler[E]], ErrorHandler[E]]:
    """`app.exception_handler(error)` with its type: Powertools leaves the decorator unannotated."""
    register: Callable[[ErrorHandler[E]], ErrorHandler[E]] = app.exception_handler(error)
    return register


@_on(OrderError)
def _order_error(error: OrderError) -> Response[str]:
    return _error(error.status, error.code, str(error))


@_on(RetryableError)
def _retryable(error: RetryableError) -> Response[str]:
    logger.info("transient failure, asking the client to retry", extra={"error_type": type(error).__name__})
    return _error(
        503, "ServiceUnavailable", "temporarily unavailable, retry with the same key", {"Retry-After": "1"}
    )


@_on(Exception)
def _unexpected(error: Exception) -> Response[str]:
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    return _error(500, "InternalError", "internal error; retry with the same Idempotency-Key")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics_per_invocation
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


init_done()  # the end of init (orders.handlers)
