"""The published OpenAPI description: generated from the contract models, committed, self-consistent."""

from __future__ import annotations

import json

import jsonschema
from hypothesis import example, given, settings
from hypothesis import strategies as st

from infra.api_model import model_schema
from orders import openapi
from orders.contract import CreateOrderRequest, parse_create_order
from orders.errors import InvalidRequest
from orders.workflow import ROUTES
from proof.catalog import load_seed
from reliability.http import HEADER, MAX_KEY_CHARS, KeyRejected, idempotency_key


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


# API Gateway's model of the body: the document's schema in draft 4's words (infra/api_model.py)
EDGE = jsonschema.Draft4Validator(
    model_schema(openapi.document()["components"]["schemas"]["CreateOrderRequest"])
)


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
@example({"customer_id": "c", "currency": "EUR", "items": [{"sku": "a", "quantity": 65.0}]})
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


def test_a_quantity_written_with_a_zero_fraction_is_that_integer():
    # Regression: the document (JSON Schema 2020-12) admits 65.0 as an integer, and the edge (400)
    # and the function (422) refused it
    order = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 65}]}
    spelled = {**order, "items": [{"sku": "sku-1", "quantity": 65.0}]}

    parsed = parse_create_order(json.dumps(spelled))

    assert parsed.items[0].quantity == 65
    assert type(parsed.items[0].quantity) is int
    # one order, one idempotency payload, whichever way it is written
    assert parsed.model_dump(mode="json") == parse_create_order(json.dumps(order)).model_dump(mode="json")
    assert EDGE.is_valid(spelled)
    assert not EDGE.is_valid({**order, "items": [{"sku": "sku-1", "quantity": 65.5}]})


def test_a_line_sent_twice_is_refused_by_the_document_and_the_edge():
    schema = openapi.document()["components"]["schemas"]["CreateOrderRequest"]
    twice = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}] * 2}
    assert schema["properties"]["items"]["uniqueItems"] is True
    assert not jsonschema.Draft202012Validator(schema).is_valid(twice)
    assert not EDGE.is_valid(twice)


KEY_SCHEMA = jsonschema.Draft202012Validator(
    next(
        parameter["schema"]
        for parameter in openapi.document()["paths"]["/orders"]["post"]["parameters"]
        if parameter["name"] == HEADER
    )
)


def _function_takes(value: str) -> bool:
    try:
        return idempotency_key({HEADER: value}) is not None
    except KeyRejected:
        return False


# Pieces of header values: the characters the rules turn on, escapes, and runs that reach the
# length bound (255 characters of the key)
_pieces = st.sampled_from(
    ["a", "~", " ", '"', "\\", ",", '\\"', "\\\\", "\t", "\u00e9", "\x7f", "\x00", "a" * 100]
)
header_values = st.one_of(
    st.lists(_pieces, max_size=12).map("".join),
    st.lists(_pieces, max_size=12).map(lambda pieces: '"' + "".join(pieces) + '"'),
    st.tuples(st.integers(MAX_KEY_CHARS - 3, MAX_KEY_CHARS + 3), st.lists(_pieces, max_size=4)).map(
        lambda t: "k" * t[0] + "".join(t[1])
    ),
    st.tuples(st.integers(MAX_KEY_CHARS - 3, MAX_KEY_CHARS + 3), st.lists(_pieces, max_size=4)).map(
        lambda t: '"' + "k" * t[0] + "".join(t[1]) + '"'
    ),
)


@settings(deadline=None, max_examples=500)
@given(header_values.filter(lambda value: value == value.strip(" \t")))
@example("k" * MAX_KEY_CHARS)
@example("k" * (MAX_KEY_CHARS + 1))
@example('"' + "k" * MAX_KEY_CHARS + '"')
@example('"' + "k" * (MAX_KEY_CHARS + 1) + '"')
@example('"' + '\\"' * MAX_KEY_CHARS + '"')
@example('" "')
@example('""')
@example("a b")
@example("a,b")
def test_the_key_header_schema_is_the_function_s_rule(value):
    # Regression: the document said only "a string of 1 character or more"; the length, the
    # characters and the quoted form were prose. (Surrounding whitespace is not part of a field
    # value in HTTP, so the values here have none.)
    assert KEY_SCHEMA.is_valid(value) == _function_takes(value), value


def test_the_example_orders_are_accepted_orders_on_the_seeded_catalog():
    catalog = {item.sku for item in load_seed()}
    content = openapi.document()["paths"]["/orders"]["post"]["requestBody"]["content"]["application/json"]
    examples = [example["value"] for example in content["examples"].values()]

    assert len(examples) >= 2
    for order in examples:
        parsed = parse_create_order(json.dumps(order))
        assert {item.sku for item in parsed.items} <= catalog


def test_an_accepted_order_links_to_where_it_is_read():
    # A client (or schemathesis's stateful phase) follows POST's 202 to GET /orders/{order_id}
    document = openapi.document()
    links = document["paths"]["/orders"]["post"]["responses"]["202"]["links"]
    assert links == {
        "getOrder": {"operationId": "getOrder", "parameters": {"order_id": "$response.body#/order_id"}}
    }
    assert document["paths"]["/orders/{order_id}"]["get"]["operationId"] == "getOrder"
