"""The published document against the API, by schemathesis, in `make test`: a short run of every
phase (the same command `make fuzz` runs long, lab/src/ops/fuzz/schemathesis_run.py) over HTTP to the
in-process cloud's edge. It fails when the document and the API drift apart: a request the document
admits is refused (outside the business rules schemathesis.toml names), one it refuses is taken,
or an answer is not the one documented."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from emulator.apigw_template import HTTP_METHODS
from ops.fuzz import schemathesis_run
from orders.openapi import ROUTED_METHODS

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
# Bounded: a few test cases per operation and phase (a minute or so on 2 shared cores); a fixed
# seed, so a failure here is the same failure on every run (make fuzz draws many more).
MAX_EXAMPLES = 8
SEED = 1


def test_schemathesis_finds_the_api_and_its_document_agree(api_url: str, tmp_path: Path):
    figures = schemathesis_run.run(api_url, tmp_path, max_examples=MAX_EXAMPLES, seed=SEED)

    report = {key: value for key, value in figures.items() if key != "output"}
    assert figures["ok"], figures["output"][-6000:] + json.dumps(report, indent=2)
    assert set(figures["phases"].values()) <= {"success", "skip"}, report
    # The examples and the link reach the happy path: orders accepted, then read back
    assert {"202", "200"} <= set(figures["statuses"]), report


def test_the_methods_schemathesis_tries_are_those_api_gateway_routes():
    # TRACE and any other method API Gateway has no method for get its 403, never the function's
    # 405: schemathesis.toml leaves them out, and the document says so, both from this one list
    config = tomllib.loads(schemathesis_run.CONFIG.read_text())
    tried = {method.upper() for method in config["phases"]["coverage"]["unexpected-methods"]}
    assert set(ROUTED_METHODS) == set(HTTP_METHODS)
    assert tried == set(ROUTED_METHODS) - {"HEAD"}  # HEAD: schemathesis never tries it as undeclared
