"""bench/cost.py through the real handlers: what an order writes to the logs, and its pricing.

Run as its own process, as `make bench` runs it: it captures file descriptor 1, which pytest's
output capture would otherwise hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A happy-path order's invocations that decide something: api, five saga steps, notify, analytics.
# The worker's first delivery writes none: its one dedup is the execution name (a duplicate
# delivery logs DedupHit).
DECIDING_INVOCATIONS_PER_ORDER = 8


@pytest.fixture(scope="module")
def one_order(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    results = tmp_path_factory.mktemp("cost")
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "cost.py"), "--orders", "1", "--results", str(results)],
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}"},
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    found: dict[str, Any] = json.loads((results / "cost.json").read_text())
    return found


def test_an_order_logs_one_decision_line_and_one_metric_document_per_deciding_invocation(one_order):
    log = one_order["measured"]["log"]
    assert log["decision_lines"] == DECIDING_INVOCATIONS_PER_ORDER
    assert log["metric_documents"] == DECIDING_INVOCATIONS_PER_ORDER
    # 15 lines and 15 documents, 17.2 KB, before one document per invocation; 8.6 KB before a
    # line stopped repeating the function's ARN and memory size, its token and its key (6.3 KB)
    assert log["decision_line_bytes"] + log["metric_document_bytes"] < 7_000


def test_without_the_layer_an_order_costs_less_by_its_tables_and_its_log_bytes(one_order):
    with_layer, without = (one_order["cost_per_order"][k] for k in ("with the layer", "without the layer"))
    assert one_order["measured"]["layer_calls_per_order"] > 0
    assert without["DynamoDB"] < with_layer["DynamoDB"]
    assert without["CloudWatch Logs"] < with_layer["CloudWatch Logs"]
    unchanged = ("Step Functions", "Lambda", "API Gateway", "SQS")
    assert [without[s] for s in unchanged] == [with_layer[s] for s in unchanged]
