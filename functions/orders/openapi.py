"""The API's OpenAPI 3.1 description, generated from the routes (orders.workflow.ROUTES) and the
contract models they name.

`make openapi` (`python -m orders.openapi`) writes it to `functions/orders/openapi.json`, the file
the project publishes; a test holds the committed file to this module. The same document is what
the edge is built from: `infra/constructs/api.py` reads the request model
(`components.schemas.CreateOrderRequest`) and API Gateway's own error answers
(`x-amazon-apigateway-gateway-responses`) from it, so the app, the edge and the published
description are one definition.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orders import contract
from orders.contract import MAX_BODY_BYTES
from orders.workflow import ROUTES, Route
from reliability.http import HEADER, MAX_KEY_CHARS, REPLAYED_HEADER

DOCUMENT = Path(__file__).with_name("openapi.json")
GATEWAY_RESPONSES = "x-amazon-apigateway-gateway-responses"
UNMATCHED = "x-retrysafe-unmatched-requests"


def _gateway(status: int, code: str, *, retry_after: bool = False) -> dict[str, Any]:
    """A gateway response in the service's error shape ($context.error.messageString is quoted)."""
    response: dict[str, Any] = {
        "statusCode": status,
        "responseTemplates": {
            "application/json": f'{{"error": "{code}", "message": $context.error.messageString}}'
        },
    }
    if retry_after:
        response["responseParameters"] = {"gatewayresponse.header.Retry-After": "'1'"}
    return response


# API Gateway's own answers, each in the error shape (response type -> status, code). The two
# BAD_REQUEST ones use the code the function gives for the same fault. With the catch-all methods
# an unknown path or method reaches the function (404/405); MISSING_AUTHENTICATION_TOKEN is then
# what an unsigned request gets on an IAM stage, so it keeps its 403 rather than posing as a 404.
GATEWAY: dict[str, dict[str, Any]] = {
    "BAD_REQUEST_PARAMETERS": _gateway(400, "IdempotencyKeyMissing"),
    "BAD_REQUEST_BODY": _gateway(400, "InvalidRequest"),
    "UNAUTHORIZED": _gateway(401, "Unauthorized"),
    "MISSING_AUTHENTICATION_TOKEN": _gateway(403, "MissingAuthenticationToken"),
    "ACCESS_DENIED": _gateway(403, "AccessDenied"),
    "INVALID_SIGNATURE": _gateway(403, "InvalidSignature"),
    "EXPIRED_TOKEN": _gateway(403, "ExpiredToken"),
    "REQUEST_TOO_LARGE": _gateway(413, "RequestTooLarge"),
    "UNSUPPORTED_MEDIA_TYPE": _gateway(415, "UnsupportedMediaType"),
    "THROTTLED": _gateway(429, "TooManyRequests", retry_after=True),
    "QUOTA_EXCEEDED": _gateway(429, "TooManyRequests", retry_after=True),
    "INTEGRATION_TIMEOUT": _gateway(504, "GatewayTimeout"),
    # Any other refusal or failure of the gateway (its status is the default one of its type).
    "DEFAULT_4XX": _gateway(400, "RequestRefused"),
    "DEFAULT_5XX": _gateway(502, "GatewayError"),
}
# The DEFAULT_* entries keep each type's own status; the status above is only their documentation.
GATEWAY_DEFAULTS = ("DEFAULT_4XX", "DEFAULT_5XX")
# Every status a DEFAULT_* response may carry here (the types API Gateway has beyond the ones above).
_DEFAULT_STATUSES = {"DEFAULT_4XX": (400, 403, 404, 429), "DEFAULT_5XX": (500, 502, 503, 504)}

# What the function may answer on any operation (each route declares its own codes).
_EVERY_OPERATION_ERRORS: dict[int, tuple[str, ...]] = {
    500: ("InternalError",),
    503: ("ServiceUnavailable",),
}
# A request no operation matches: the function's catch-all answers (and the gateway's).
_UNMATCHED_ERRORS: dict[int, tuple[str, ...]] = {404: ("NotFound",), 405: ("MethodNotAllowed",)}


def _merge(*tables: Mapping[int, Iterable[str]]) -> dict[int, list[str]]:
    merged: dict[int, list[str]] = {}
    for table in tables:
        for status, codes in table.items():
            merged.setdefault(status, [])
            merged[status] += [code for code in codes if code not in merged[status]]
    return dict(sorted(merged.items()))


def _gateway_errors(*, validated_body: bool = False, required_header: bool = False) -> dict[int, list[str]]:
    """The gateway's answers an operation can get (the BAD_REQUEST ones only where it validates)."""
    skipped = {"BAD_REQUEST_BODY": not validated_body, "BAD_REQUEST_PARAMETERS": not required_header}
    table: dict[int, list[str]] = {}
    for response_type, response in GATEWAY.items():
        if skipped.get(response_type, False):
            continue
        code = json.loads(
            response["responseTemplates"]["application/json"].replace("$context.error.messageString", '""')
        )["error"]
        for status in _DEFAULT_STATUSES.get(response_type, (response["statusCode"],)):
            table.setdefault(status, []).append(code)
    return table


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with its `$defs` inlined: self-contained, as an API Gateway model
    must be (it resolves no local references), and valid as JSON Schema draft 4 for the request."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(definitions[ref.removeprefix("#/$defs/")])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


def error_schema(codes: Iterable[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error", "message"],
        "additionalProperties": False,
        "properties": {"error": {"type": "string", "enum": list(codes)}, "message": {"type": "string"}},
    }


def _responses(success: tuple[int, str, str], errors: Mapping[int, list[str]]) -> dict[str, Any]:
    status, description, schema = success
    responses: dict[str, Any] = {
        str(status): {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        }
    }
    for error_status, codes in errors.items():
        responses[str(error_status)] = {
            "description": ", ".join(codes),
            "content": {"application/json": {"schema": error_schema(codes)}},
        }
    return responses


_KEY_DESCRIPTION = (
    f'An RFC 8941 sf-string (`"..."`, escapes `\\"` and `\\\\`) or the same characters bare; '
    f'1-{MAX_KEY_CHARS} printable ASCII characters (bare: no `"`, `\\` or `,`); '
    f"one key per request (two header lines with different keys: 400)."
)


def _operation(route: Route) -> dict[str, Any]:
    errors = _merge(
        route.errors,
        _EVERY_OPERATION_ERRORS,
        _gateway_errors(validated_body=route.request is not None, required_header=route.idempotent),
    )
    responses = _responses((route.status, route.description, route.response), errors)
    parameters: list[dict[str, Any]] = []
    if route.idempotent:
        parameters.append(
            {
                "name": HEADER,
                "in": "header",
                "required": True,
                "description": _KEY_DESCRIPTION,
                "schema": {"type": "string", "minLength": 1},
            }
        )
        replayed = {"description": "true on a replay", "schema": {"type": "string", "enum": ["true"]}}
        responses[str(route.status)]["headers"] = {REPLAYED_HEADER: replayed}
    parameters += [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"\{(\w+)\}", route.path)
    ]
    operation: dict[str, Any] = {"operationId": route.operation_id}
    if parameters:
        operation["parameters"] = parameters
    if route.request is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{route.request}"}}},
        }
    operation["responses"] = responses
    return operation


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    models = [name for route in ROUTES for name in (route.request, route.response) if name is not None]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "retrysafe orders API",
            "version": "1",
            "description": (
                "Every error answer is {error, message}. POST bodies are application/json, at most "
                f"{MAX_BODY_BYTES} bytes; each sku at most once per order."
            ),
        },
        "paths": paths,
        "components": {"schemas": {name: _schema(getattr(contract, name)) for name in dict.fromkeys(models)}},
        UNMATCHED: {
            "description": "Any other path or method: 404 NotFound or 405 MethodNotAllowed (with Allow).",
            "responses": {
                str(status): {"content": {"application/json": {"schema": error_schema(codes)}}}
                for status, codes in _merge(
                    _UNMATCHED_ERRORS, _EVERY_OPERATION_ERRORS, _gateway_errors()
                ).items()
            },
        },
        GATEWAY_RESPONSES: GATEWAY,
    }


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    """`python -m orders.openapi [--check]`: write the document, or exit 1 when it is stale."""
    text = render()
    if "--check" in argv:
        if DOCUMENT.read_text() != text:
            print(f"{DOCUMENT} is stale: run make openapi", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(text)
    print(f"wrote {DOCUMENT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
