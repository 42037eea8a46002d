"""The published OpenAPI description: generated from the contract models, committed, self-consistent."""

from __future__ import annotations

import json

import jsonschema
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orders import openapi
from orders.contract import CreateOrderRequest, parse_create_order
from orders.errors import InvalidRequest
from orders.workflow import ROUTES


def test_the_committed_document_is_what_the_contract_generates():
    # `make openapi` writes it; a contract change without it fails here
    assert json.loads(openapi.DOCUMENT.read_text()) == openapi.document()
    assert openapi.main(["--check"]) == 0


def test_the_document_is_valid_openapi_3_1_json_schema():
    document = openapi.document()
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft4Validator.check_schema(document["components"]["schemas"]["CreateOrderRequest"])


def test_every_route_of_the_function_is_documented_and_nothing_else():
    documented = {
        (method.upper(), path)
        for path, operations in openapi.document()["paths"].items()
        for method in operations
    }
    assert documented == {(route.method, route.path) for route in ROUTES}


def test_every_documented_error_is_in_the_error_shape():
    document = openapi.document()
    operations = [op for ops in document["paths"].values() for op in ops.values()]
    for responses in [op["responses"] for op in operations] + [document[openapi.UNMATCHED]["responses"]]:
        for status, response in responses.items():
            if int(status) < 400:
                continue
            schema = response["content"]["application/json"]["schema"]
            assert schema["required"] == ["error", "message"]
            assert schema["additionalProperties"] is False


ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=64)
any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
near_orders = st.fixed_dictionaries(
    {
        "customer_id": ids | any_json,
        "currency": st.sampled_from(["EUR", "eur", "EURO", ""]) | any_json,
        "items": st.lists(
            st.fixed_dictionaries(
                {"sku": st.sampled_from(["sku-1", "sku-2", "sku-3"]) | ids, "quantity": st.integers(-1, 102)}
            )
            | any_json,
            max_size=5,
        )
        | any_json,
    },
    optional={"extra": any_json},
)


EDGE = jsonschema.Draft4Validator(openapi.document()["components"]["schemas"]["CreateOrderRequest"])


def _edge_cannot_tell(body: dict) -> bool:
    """What the edge's JSON Schema lets through and the function refuses: a repeated sku (not
    expressible) and a trailing newline, which `$` in the patterns matches in Java and Python
    regexes (API Gateway, jsonschema) but not in pydantic's."""
    skus = [item["sku"] for item in body["items"]]
    strings = [body["customer_id"], body["currency"], *skus]
    return len(skus) != len(set(skus)) or any(value.endswith("\n") for value in strings)


@settings(deadline=None)
@given(near_orders | any_json)
@example({"customer_id": "c\n", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]})
@example({"customer_id": "c", "currency": "EUR", "items": [{"sku": "a", "quantity": 60}] * 2})
def test_the_edge_model_refuses_nothing_the_function_accepts(body):
    # One definition: what the function accepts passes the edge's model (the edge may refuse less,
    # and the function then answers 422)
    try:
        accepted = parse_create_order(json.dumps(body))
    except InvalidRequest:
        if EDGE.is_valid(body):
            assert _edge_cannot_tell(body), body
        return
    assert EDGE.is_valid(body)
    assert isinstance(accepted, CreateOrderRequest)
