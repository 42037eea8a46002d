"""The site's generated parts (lab/src/ops/docs_site.py): the make targets from `make help`, and the API's
error table from the published OpenAPI document, which refuses to drift from the document."""

from __future__ import annotations

import copy
import importlib
import json
import re
from pathlib import Path

import pytest

from ops.docs_site import (
    CONSTANT,
    ERROR_MEANINGS,
    OPENAPI,
    constant_value,
    error_codes,
    errors_table,
    fill_constants,
    make_help,
    make_targets_table,
    openapi_source,
    service_meanings,
)
from ops.service import openapi_path
from tests.docs.sections import ROOT


def test_the_make_targets_page_lists_every_target_make_help_lists() -> None:
    documented = re.findall(r"^([a-zA-Z0-9_-]+):.*## ", (ROOT / "Makefile").read_text(), re.M)
    table = make_targets_table(make_help())
    assert re.findall(r"^\| `([^`]+)` \|", table, re.M) == documented
    assert "| `docs` |" in table


def test_the_document_is_the_one_beside_the_declared_services_declaration(tmp_path: Path) -> None:
    # The sample's, as the lab's tools find it (importing the service), and any other service's
    assert openapi_path() == OPENAPI
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.retrysafe]\nservice = "two_step_service:SERVICE"\n')
    tests = ROOT / "lib" / "reliability" / "tests"
    assert openapi_source(pyproject, (ROOT, tests)) == tests / "openapi.json"


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
        errors_table(document, {**ERROR_MEANINGS, **service_meanings(), "NoLongerAnswered": "gone"})


def test_the_services_own_codes_are_explained_by_its_proof_not_by_the_site() -> None:
    assert "UnknownSku" not in ERROR_MEANINGS
    assert "UnknownSku" in service_meanings()
    assert "| 422 | `UnknownSku` |" in errors_table(json.loads(OPENAPI.read_text()))


def test_every_constant_a_page_names_is_shown_with_the_value_the_code_has() -> None:
    texts = [page.read_text() for page in (ROOT / "docs").glob("*.md")] + list(ERROR_MEANINGS.values())
    texts += list(service_meanings().values())
    named = {match[1] for text in texts for match in CONSTANT.finditer(text)}
    assert "orders.contract.MAX_BODY_BYTES" in named
    assert "chaos.mutation.BUDGET" in named
    for dotted in sorted(named):
        module, _, name = dotted.rpartition(".")
        assert constant_value(dotted) == getattr(importlib.import_module(module), name), dotted


def test_a_constant_that_is_gone_or_not_a_constant_fails_the_build() -> None:
    with pytest.raises(ValueError, match="no module-level NO_SUCH_BUDGET"):
        fill_constants("<!-- constant chaos.mutation.NO_SUCH_BUDGET -->")
    with pytest.raises(ValueError, match="not a constant"):
        fill_constants("<!-- constant chaos.mutation.RESULTS_FILE -->")
    with pytest.raises(ValueError, match=r"no module chaos\.no_such_module"):
        fill_constants("<!-- constant chaos.no_such_module.BUDGET -->")
    shown = fill_constants("up to <!-- constant reliability.cdk.windows.SECONDS_PER_DAY --> s")
    assert shown == "up to 86,400 s"
    with pytest.raises(ValueError, match="not filled"):
        fill_constants("a budget of <!-- constant chaos.mutation.BUDGET-->")
    shown = "write `<!-- constant module.NAME -->`"
    assert fill_constants(shown) == shown
