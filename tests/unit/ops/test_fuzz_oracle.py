"""The fuzz's oracle judges by the document's own operations: a service with other routes than
the sample's is judged by them (it used to look `/orders` up by name: KeyError)."""

from __future__ import annotations

import json
from typing import Any

from ops.fuzz import oracle as fuzz_oracle
from ops.fuzz.oracle import Answer, Oracle, Tally
from ops.fuzz.requests import Request
from orders import openapi

UNMATCHED = openapi.UNMATCHED

# An error answer's schema, inline as the sample's document writes it (its codes in the enum).
ERROR = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"error": {"enum": ["NotFound", "Invalid"]}, "message": {"type": "string"}},
            }
        }
    }
}


def _document() -> dict[str, Any]:
    accepted = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Accepted"}}}}
    view = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/View"}}}}
    return {
        "paths": {
            "/transfers": {"post": {"responses": {"202": accepted, "400": ERROR}}},
            "/transfers/{transfer_id}": {"get": {"responses": {"200": view, "404": ERROR}}},
        },
        "components": {
            "schemas": {
                "Accepted": {"type": "object", "required": ["transfer_id"]},
                "View": {"type": "object", "required": ["status"]},
            }
        },
        UNMATCHED: {"responses": {"404": ERROR, "405": ERROR}},
    }


def _judge(method: str, path: str, status: int, body: Any) -> Tally:
    tally = Tally()
    answer = Answer(status, (("Content-Type", "application/json"),), json.dumps(body).encode())
    Oracle("local", _document()).check(Request(method, path, ()), answer, tally)
    return tally


def test_each_request_is_matched_to_the_documented_operation_by_method_and_template():
    oracle = Oracle("local", _document())
    assert oracle.operation(Request("POST", "/local/transfers", ()))[1] == "Accepted"
    assert oracle.operation(Request("GET", "/local/transfers/t-1", ()))[1] == "View"
    assert oracle.operation(Request("GET", "/local/transfers", ()))[1] is None  # not documented: unmatched
    assert oracle.operation(Request("GET", "/local/transfers/t-1/x", ()))[1] is None
    assert oracle.operation(Request("POST", "/prod/transfers", ()))[1] is None  # outside the stage


def test_answers_are_judged_against_the_matched_operation():
    assert _judge("POST", "/local/transfers", 202, {"transfer_id": "t-1"}).ok
    assert _judge("POST", "/local/transfers", 202, {"id": "t-1"}).undocumented == 1  # not the model
    assert _judge("GET", "/local/transfers/t-1", 404, {"error": "NotFound", "message": "m"}).ok
    assert _judge("GET", "/local/transfers/t-1", 409, {"error": "Busy", "message": "m"}).undocumented == 1


def test_the_unmatched_requests_key_is_the_one_the_document_is_written_with():
    assert fuzz_oracle.UNMATCHED == UNMATCHED
