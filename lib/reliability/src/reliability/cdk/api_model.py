"""A request schema of the published OpenAPI document as an API Gateway model (standard library only).

The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12; API Gateway validates a body
against its model as JSON Schema draft 4. The keywords the contract uses read the same in both
but one: `integer`. Draft 4 means a number written without a fraction, so `65.0` is not an
integer there, while 2020-12 means any number with a zero fractional part, `65.0` included (and
a pydantic model validating the body takes it as 65). The model says the document's meaning
in draft 4's words: a number that is a multiple of 1.
"""

from __future__ import annotations

from typing import Any

JSON_SCHEMA_DRAFT4 = "http://json-schema.org/draft-04/schema#"


def _draft4(node: Any) -> Any:
    if isinstance(node, list):
        return [_draft4(item) for item in node]
    if not isinstance(node, dict):
        return node
    translated = {key: _draft4(value) for key, value in node.items()}
    if translated.get("type") == "integer":
        translated["type"] = "number"
        translated.setdefault("multipleOf", 1)
    return translated


def model_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The draft-4 model of one of the document's (self-contained) request schemas."""
    translated: dict[str, Any] = _draft4(schema)
    return {"$schema": JSON_SCHEMA_DRAFT4, **translated}
