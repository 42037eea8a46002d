"""The public API: `POST /orders` (HTTP idempotency) and `GET /orders/{order_id}`.

Domain exceptions become HTTP responses in ONE place (the exception handlers below); every
error body is `{"error": <code>, "message": <text>}`.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from orders.contract import parse_create_order
from orders.errors import OrderError
from orders.observability import logger, metrics, tracer
from orders.runtime import current
from reliability.errors import RetryableError
from reliability.http import HttpResponse

CREATE_ROUTE = "POST /orders"
JSON = "application/json"

app = APIGatewayRestResolver()


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(status_code=status, content_type=JSON, body=json.dumps(body), headers=headers or {})


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return _json(status, {"error": code, "message": message}, headers)


def _from_http(response: HttpResponse) -> Response:
    return _json(response.status, response.body, dict(response.headers))


def _status_base() -> str:
    """`<scheme>://<domain>/<stage>` when API Gateway tells us, else "" (a path-only status URL).

    The scheme is the one the client used, as API Gateway forwards it in `X-Forwarded-Proto`
    (always https on AWS; http on the local cloud's REST API).
    """
    event = app.current_event
    context = event.request_context
    domain, stage = context.domain_name, context.stage
    scheme = (event.headers.get("X-Forwarded-Proto") or "https").split(",")[0].strip().lower()
    if scheme not in ("http", "https"):
        scheme = "https"
    return f"{scheme}://{domain}/{stage}" if domain and stage else ""


@app.post("/orders")
def create_order() -> Response:
    runtime = current()
    event = app.current_event
    idempotency = runtime.http_idempotency()
    key = idempotency.request_key(route=CREATE_ROUTE, headers=event.headers)
    body = event.body

    def execute() -> HttpResponse:
        if key is None:  # handle() answers 400 before calling us; keep mypy and readers sure
            raise OrderError("Idempotency-Key is required")
        request = parse_create_order(body)
        accepted = runtime.order_service.place(request, stored_key=key.value, status_base=_status_base())
        return HttpResponse(status=202, body=accepted.model_dump(mode="json"))

    return _from_http(
        idempotency.handle(
            route=CREATE_ROUTE,
            headers=event.headers,
            payload=body,
            lambda_context=app.lambda_context,
            execute=execute,
        )
    )


@app.get("/orders/<order_id>")
def get_order(order_id: str) -> Response:
    return _json(200, current().order_service.view(order_id).model_dump(mode="json"))


@app.not_found
def _no_route(_exc: Exception) -> Response:
    return _error(404, "NotFound", f"no route for {app.current_event.http_method} {app.current_event.path}")


@app.exception_handler(OrderError)
def _order_error(error: OrderError) -> Response:
    return _error(error.status, error.code, str(error))


@app.exception_handler(RetryableError)
def _retryable(error: RetryableError) -> Response:
    logger.info("transient failure, asking the client to retry", extra={"error_type": type(error).__name__})
    return _error(
        503, "unavailable", "temporarily unavailable, retry with the same key", {"Retry-After": "1"}
    )


@app.exception_handler(Exception)
def _unexpected(error: Exception) -> Response:
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    return _error(500, "InternalError", "internal error; retry with the same Idempotency-Key")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
