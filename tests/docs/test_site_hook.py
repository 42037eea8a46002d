"""The site's generated parts (ops/docs_site.py): the make targets from `make help`, and the API's
error table from the published OpenAPI document, which refuses to drift from the document."""

from __future__ import annotations

import copy
import json
import re

import pytest

from ops.docs_site import ERROR_MEANINGS, OPENAPI, error_codes, errors_table, make_help, make_targets_table
from tests.docs.sections import ROOT


def test_the_make_targets_page_lists_every_target_make_help_lists() -> None:
    documented = re.findall(r"^([a-zA-Z0-9_-]+):.*## ", (ROOT / "Makefile").read_text(), re.M)
    table = make_targets_table(make_help())
    assert re.findall(r"^\| `([^`]+)` \|", table, re.M) == documented
    assert "| `docs` |" in table


def test_the_error_table_has_a_row_for_every_status_and_code_of_the_document() -> None:
    document = json.loads(OPENAPI.read_text())
    table = errors_table(document)
    for status, code in error_codes(document):
        assert f"| {status} | `{code}` |" in table


def test_a_code_the_document_gains_or_loses_fails_the_build() -> None:
    document = json.loads(OPENAPI.read_text())
    # Given a document whose POST may answer a code nobody explained
    gained = copy.deepcopy(document)
    schema = gained["paths"]["/orders"]["post"]["responses"]["409"]["content"]["application/json"]["schema"]
    schema["properties"]["error"]["enum"].append("OrderLocked")
    with pytest.raises(ValueError, match="409 OrderLocked"):
        errors_table(gained)
    # Given an explanation of a code no answer carries any more
    with pytest.raises(ValueError, match="NoLongerAnswered"):
        errors_table(document, {**ERROR_MEANINGS, "NoLongerAnswered": "gone"})
