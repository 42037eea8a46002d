"""The API's OpenAPI 3.1 description, generated from the routes (orders.workflow.ROUTES) and the
contract they name: the request's own JSON Schema (`orders.contract.CREATE_ORDER_SCHEMA`) and the
schemas pydantic derives from the response dataclasses (here, at build time only: the functions
load no pydantic).

`make openapi` (`python -m orders.openapi`) writes it to `functions/orders/openapi.json`, the file
the project publishes; a test holds the committed file to this module. The same document is what
the edge is built from: `infra/constructs/api.py` reads the request model
(`components.schemas.CreateOrderRequest`) and API Gateway's own error answers
(`x-amazon-apigateway-gateway-responses`) from it, so the app, the edge and the published
description are one definition.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from orders import contract
from orders.contract import MAX_BODY_BYTES
from orders.workflow import ROUTES, Route
from reliability.http import HEADER, MAX_KEY_CHARS, REPLAYED_HEADER, KeyRejected, idempotency_key

DOCUMENT = Path(__file__).with_name("openapi.json")
# The catalog `make seed` loads: the examples order from it, so an example is an order the API takes.
CATALOG_SEED = Path(__file__).with_name("catalog_seed.json")
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
# an unknown path or another routed method reaches the function (404/405); MISSING_AUTHENTICATION_TOKEN
# is then what an unsigned request gets on an IAM stage, a path outside the stage, or a method API
# Gateway cannot route (ROUTED_METHODS), so it keeps its 403 rather than posing as a 404.
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
# The methods API Gateway REST can route (a method of a resource is one of these; ANY is all
# seven): only these reach the catch-all. Any other (TRACE, CONNECT, ...) has no method to match,
# and API Gateway answers it with MISSING_AUTHENTICATION_TOKEN (403 in the error shape).
ROUTED_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


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


# The bodies whose schema the contract writes itself (what a function checks), published as
# written wherever they appear; the other bodies' schemas pydantic derives from their dataclasses.
_WRITTEN_SCHEMAS = {
    "CreateOrderRequest": contract.CREATE_ORDER_SCHEMA,
    "OrderItem": contract.ORDER_ITEM_SCHEMA,
}


def _schema(name: str) -> dict[str, Any]:
    """The body's JSON Schema with its `$defs` inlined: self-contained, as an API Gateway model
    must be (it resolves no local references), and valid as JSON Schema draft 4 for the request."""
    if name in _WRITTEN_SCHEMAS:
        written: dict[str, Any] = json.loads(json.dumps(_WRITTEN_SCHEMAS[name]))  # a copy
        return written
    schema = TypeAdapter(getattr(contract, name)).json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                return inline(_WRITTEN_SCHEMAS.get(name) or definitions[name])
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


# Every octet a header value can carry (HTTP field values are bytes; the function reads them as
# Latin-1 at most): what the key rules are probed over.
_HEADER_OCTETS = tuple(map(chr, range(0x100)))


def _accepted_key(value: str) -> str | None:
    try:
        return idempotency_key({HEADER: value})
    except KeyRejected:
        return None


def _char_class(chars: Iterable[str]) -> str:
    """A regex character class (ECMA-262, as JSON Schema's `pattern` reads it) of `chars`, in ranges."""
    runs: list[list[int]] = []  # [first, last] code points of consecutive characters
    for code in sorted({ord(char) for char in chars}):
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])

    def literal(code: int) -> str:
        return "\\" + chr(code) if chr(code) in "\\]^-[" else chr(code)

    def span(first: int, last: int) -> str:
        if last - first >= 2:
            return f"{literal(first)}-{literal(last)}"
        return "".join(literal(code) for code in range(first, last + 1))

    return "[" + "".join(span(first, last) for first, last in runs) + "]"


def _key_schema() -> dict[str, Any]:
    """The Idempotency-Key header's schema: the key rules of `reliability.http.idempotency_key`,
    probed over every octet rather than retyped, and its bound `MAX_KEY_CHARS` (characters of the
    key: a bare value's length, or the quoted one's characters between the quotes, an escape
    counting once). A bare value starts and ends with a visible character (HTTP strips the
    whitespace around a field value); a quoted one holds one at least (a blank key is refused)."""
    visible = [c for c in _HEADER_OCTETS if _accepted_key(c) == c]
    probe = visible[0]
    inside = [c for c in _HEADER_OCTETS if _accepted_key(probe + c + probe) == probe + c + probe]
    quoted = [c for c in _HEADER_OCTETS if _accepted_key(f'"{probe}{c}"') == probe + c]
    escaped = [c for c in _HEADER_OCTETS if _accepted_key(f'"{probe}\\{c}"') == probe + c]
    blank = [c for c in quoted if not c.strip()]
    visible_class = _char_class(visible)
    unit = f"(?:{_char_class(quoted)}|\\\\{_char_class(escaped)})"
    return {
        "type": "string",
        "anyOf": [
            {
                "title": "bare",
                "maxLength": MAX_KEY_CHARS,
                "pattern": f"^{visible_class}(?:{_char_class(inside)}*{visible_class})?$",
            },
            {
                "title": "RFC 8941 sf-string",
                "pattern": f'^"(?={_char_class(blank)}*[^{"".join(blank)}"]){unit}{{1,{MAX_KEY_CHARS}}}"$',
            },
        ],
    }


def _catalog_orders() -> dict[str, Any]:
    """Orders the API accepts once the catalog is seeded (`make seed`), named as OpenAPI examples:
    a reader, a client or a tool following the document (schemathesis's examples phase) starts
    from an order that goes through rather than from an unknown sku."""
    skus = [item["sku"] for item in json.loads(CATALOG_SEED.read_text())["items"]]
    orders = {
        "oneLine": (
            "one sku",
            {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": skus[0], "quantity": 1}]},
        ),
        "severalLines": (
            "three skus, each once",
            {
                "customer_id": "customer-2",
                "currency": "USD",
                "items": [{"sku": sku, "quantity": n} for n, sku in enumerate(skus[1:4], start=2)],
            },
        ),
    }
    for _, order in orders.values():
        contract.CreateOrderRequest.model_validate(order)  # an example outside the contract fails here
    return {name: {"summary": summary, "value": order} for name, (summary, order) in orders.items()}


# Examples of each request model (by name), for the operations that take it.
_REQUEST_EXAMPLES = {"CreateOrderRequest": _catalog_orders}


def _links(route: Route) -> dict[str, Any]:
    """Where a success answer leads: each other operation whose path parameters its body names
    (POST /orders' `order_id` -> GET /orders/{order_id}), as OpenAPI links a client or a
    stateful test follows."""
    fields = {field.name for field in dataclasses.fields(getattr(contract, route.response))}
    links: dict[str, Any] = {}
    for other in ROUTES:
        names = re.findall(r"\{(\w+)\}", other.path)
        if other is not route and names and all(name in fields for name in names):
            links[other.operation_id] = {
                "operationId": other.operation_id,
                "parameters": {name: f"$response.body#/{name}" for name in names},
            }
    return links


def _operation(route: Route) -> dict[str, Any]:
    errors = _merge(
        route.errors,
        _EVERY_OPERATION_ERRORS,
        _gateway_errors(validated_body=route.request is not None, required_header=route.idempotent),
    )
    responses = _responses((route.status, route.description, route.response), errors)
    if links := _links(route):
        responses[str(route.status)]["links"] = links
    parameters: list[dict[str, Any]] = []
    if route.idempotent:
        parameters.append(
            {
                "name": HEADER,
                "in": "header",
                "required": True,
                "description": _KEY_DESCRIPTION,
                "schema": _key_schema(),
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
        content: dict[str, Any] = {"schema": {"$ref": f"#/components/schemas/{route.request}"}}
        if route.request in _REQUEST_EXAMPLES:
            content["examples"] = _REQUEST_EXAMPLES[route.request]()
        operation["requestBody"] = {"required": True, "content": {"application/json": content}}
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
        "components": {"schemas": {name: _schema(name) for name in dict.fromkeys(models)}},
        UNMATCHED: {
            "description": (
                f"Any other path, or a path with another of the methods API Gateway routes "
                f"({', '.join(ROUTED_METHODS)}): 404 NotFound or 405 MethodNotAllowed (with Allow). "
                "Any other method (TRACE, CONNECT, ...) never reaches the function: API Gateway "
                "answers it 403 MissingAuthenticationToken."
            ),
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
