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
    found["_results"] = results
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


def test_express_with_the_layer_costs_at_most_a_quarter_of_standard_with_the_layer(one_order):
    standard, express = (one_order["types"][kind] for kind in ("Standard", "Express"))
    totals = {
        (kind, column): sum(one_order["types"][kind]["cost_per_order"][column].values())
        for kind in ("Standard", "Express")
        for column in ("with the layer", "without the layer")
    }
    assert totals["Express", "with the layer"] <= totals["Standard", "with the layer"] / 4
    assert one_order["express_share_of_standard"] <= 0.25
    # Step Functions: 6 transitions at $25 per million vs one request at $1 per million and one
    # 64 MB chunk for its happy path's 0.5 s (rounded up to 100 ms) at $0.00001667 per GB-second
    assert standard["cost_per_order"]["with the layer"]["Step Functions"] * 1e6 == pytest.approx(150.0)
    assert express["cost_per_order"]["with the layer"]["Step Functions"] * 1e6 == pytest.approx(
        1.00 + 0.0625 * 0.5 * 16.67
    )
    # The state machine's log group is priced at its template's level: ALL's events on Standard,
    # none of a happy path at ERROR on Express
    assert standard["measured"]["state_machine_log"]["level"] == "ALL"
    assert standard["measured"]["state_machine_log"]["bytes_all"] > 0
    assert express["measured"]["state_machine_log"]["level"] == "ERROR"
    assert express["measured"]["state_machine_log"]["bytes_error"] == 0
    # and the layer's share of each is said
    assert 0 < express["layer_share"] < 1
    assert one_order["command"].endswith("bench/cost.py --orders 1 --results " + str(one_order["_results"]))
