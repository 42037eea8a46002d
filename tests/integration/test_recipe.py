"""The recipe holds: a new fenced step, a third consumer and a new route are each one function
plus one entry in orders.workflow, and everything else follows from the entry.

In a copy of the project, add an atomic step `ScreenOrder` (between RecordLedger and
PublishEvents), a consumer `receipts` and a route `GET /orders/{order_id}/status`, each as a new
module with one function plus one entry (the route also `make openapi`'s regenerated document);
the copy's diff must be exactly those. Then synthesize the copy and check that the state machine,
the IAM and environment of the new functions, the new queue and DLQ, the chaos and simulator
maps, the API's template and document, and an order run in process all pick them up
(tests/integration/recipe_probe.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = "functions/orders/workflow.py"

STEP_MODULE = "functions/orders/screening.py"
STEP_EFFECT = '''"""A fraud screen before the money is booked."""

from orders.domain import OrderTerms
from orders.saga import Effect, SagaContext, StepRequest


def screen_order(ctx: SagaContext, order: OrderTerms, request: StepRequest) -> Effect:
    ctx.need(ctx.ledger, "the ledger table")
    return Effect(result={"screened_cents": order.total_cents}, writes=[])
'''
STEP_ENTRY = """    Step(
        name="ScreenOrder",
        kind="atomic",
        effect="orders.screening:screen_order",
        description="Workflow step: screen the order for fraud (fenced)",
        ports=("ledger",),
    ),
"""
CONSUMER_MODULE = "functions/orders/receipts.py"
CONSUMER_EFFECT = '''"""A receipt per completed order, kept with the notifications."""

from collections.abc import Mapping
from typing import Any

from orders.effects import ConsumerPorts
from reliability import Write


def send_receipt(ports: ConsumerPorts, event: Mapping[str, Any]) -> list[Write]:
    item = {"pk": {"S": f"order#{event['order_id']}"}, "sk": {"S": f"receipt#{event['event_id']}"}}
    return [Write(entry={"Put": {"TableName": ports.table_name("notifications"), "Item": item}})]
'''
CONSUMER_ENTRY = """    Consumer(
        name="receipts",
        effect="orders.receipts:send_receipt",
        description="Receipts queue consumer: one receipt per event id",
        tables=("notifications",),
    ),
"""
ROUTE_MODULE = "functions/orders/status.py"
ROUTE_VIEW = '''"""Where an order stands, for a polling client."""

from orders.config import ApiSettings
from orders.contract import OrderView
from orders.handlers.api import caller
from orders.runtime import current


def order_status(order_id: str) -> OrderView:
    return current(ApiSettings).order_service.view(order_id, caller=caller())
'''
ROUTE_ENTRY = """    Route(
        method="GET",
        path="/orders/{order_id}/status",
        operation_id="getOrderStatus",
        view="orders.status:order_status",
        status=200,
        description="where the order stands",
        response="OrderView",
        errors={404: ("OrderNotFound",)},
    ),
"""
OPENAPI = "functions/orders/openapi.json"


def _git(copy: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=copy, check=True, capture_output=True, text=True).stdout


def _copy_project(dest: Path) -> Path:
    """The project's files (tracked and new, not ignored) in a fresh repository."""
    listed = _git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "-c", "user.name=recipe", "-c", "user.email=recipe@example.com", "commit", "-qm", "copy")
    return dest


def _insert_entry(copy: Path, entry: str, *, before: str) -> None:
    path = copy / WORKFLOW
    text = path.read_text()
    assert text.count(before) == 1, before
    path.write_text(text.replace(before, entry + before))


def _diff(copy: Path) -> tuple[set[str], list[str]]:
    """(the files changed or added, the lines removed) since the last commit."""
    _git(copy, "add", "-A")
    files = set(_git(copy, "diff", "--cached", "--name-only").split())
    removed = [
        line
        for line in _git(copy, "diff", "--cached", "--unified=0").splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    _git(copy, "-c", "user.name=recipe", "-c", "user.email=recipe@example.com", "commit", "-qm", "change")
    return files, removed


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    copy = _copy_project(tmp_path_factory.mktemp("recipe"))

    # Given a new atomic step: one function (a new module) and one entry after RecordLedger
    (copy / STEP_MODULE).write_text(STEP_EFFECT)
    _insert_entry(copy, STEP_ENTRY, before="    # SQS has no lookup;")
    assert _diff(copy) == ({STEP_MODULE, WORKFLOW}, [])

    # And a third consumer: one function and one entry
    (copy / CONSUMER_MODULE).write_text(CONSUMER_EFFECT)
    _insert_entry(copy, CONSUMER_ENTRY, before=")\n\n\nSERVICE = Service(")
    assert _diff(copy) == ({CONSUMER_MODULE, WORKFLOW}, [])

    # And a route: one view and one entry, then the document regenerated (`make openapi`)
    (copy / ROUTE_MODULE).write_text(ROUTE_VIEW)
    _insert_entry(copy, ROUTE_ENTRY, before=")\n\nCONSUMERS: tuple")
    subprocess.run(
        [sys.executable, "-m", "orders.openapi"],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": "functions"},
        check=True,
        capture_output=True,
    )
    files, _ = _diff(copy)
    assert files == {ROUTE_MODULE, WORKFLOW, OPENAPI}

    # When the copy is synthesized, inspected and runs an order in process
    env = {
        **os.environ,
        "RETRYSAFE_FRESH_SYNTH": "1",
        "JSII_RUNTIME_PACKAGE_CACHE_ROOT": os.environ.get(
            "JSII_RUNTIME_PACKAGE_CACHE_ROOT", str(ROOT / ".cache" / "jsii")
        ),
    }
    probe = subprocess.run(
        [sys.executable, "tests/integration/recipe_probe.py", "ScreenOrder", "receipts", "/status"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-4000:]
    return dict(json.loads(probe.stdout.splitlines()[-1]))


def test_the_state_machine_runs_the_new_step_where_its_entry_is(report: dict):
    assert report["state"] == {
        "Type": "Task",
        "Next": "PublishEvents",
        "Resource": "retrysafe-local-screen-order",
    }
    assert report["next_of"]["RecordLedger"] == "ScreenOrder"


def test_the_new_step_function_gets_its_handler_env_and_iam(report: dict):
    env = report["step_env"]
    assert env["STEP_NAME"] == "ScreenOrder"
    assert {"FENCE_TABLE", "LEDGER_TABLE"} <= set(env)
    assert not {"INVENTORY_TABLE", "PAYMENTS_TABLE", "ORDERS_TABLE"} & set(env)
    policy = report["step_policy"]
    for table in ("LedgerTable", "FencesTable"):
        assert table in policy
    for table in ("InventoryTable", "PaymentsTable", "OrdersTable"):
        assert table not in policy


def test_the_new_consumer_gets_its_queue_dlq_env_and_iam(report: dict):
    assert {"retrysafe-local-receipts", "retrysafe-local-receipts-dlq"} <= set(report["queues"])
    env = report["consumer_env"]
    assert env["CONSUMER_NAME"] == "receipts"
    # ORDERS_TABLE: like every consumer, it verifies each event against its order (orders.consumers)
    assert {"IDEMPOTENCY_TABLE", "ORDERS_TABLE", "NOTIFICATIONS_TABLE", "RECEIPTS_DLQ_URL"} <= set(env)
    assert "ReceiptsQueue" in report["consumer_policy"]
    # PublishEvents sends to every consumer on the list, the new one included
    assert {"NOTIFY_QUEUE_URL", "ANALYTICS_QUEUE_URL", "RECEIPTS_QUEUE_URL"} <= set(report["publish_env"])
    assert "ReceiptsQueue" in report["publish_policy"]


def test_the_chaos_and_simulator_maps_pick_both_up(report: dict):
    assert "retrysafe-local-screen-order" in report["chaos_step_functions"]
    assert report["interleave_step_order"].index("ScreenOrder") == 3
    assert report["chaos_queue_consumers"]["ReceiptsQueueUrl"] == "Receipts"
    assert report["simulator_queue_consumers"]["ReceiptsQueueUrl"] == "Receipts"


def test_the_mutants_and_the_fault_schedules_cover_both(report: dict):
    functions = report["mutant_functions"]
    for guard in ("fencing-counter", "fence-owner-token", "atomic-step-once", "effect-with-fence"):
        assert "screen-order" in functions[guard], guard
    for guard in ("fencing-counter", "consumer-dedup", "effect-with-fence"):
        assert "receipts" in functions[guard], guard
    assert "ScreenOrder" in report["mutant_pairs"]["fence-owner-token"]
    assert "ReceiptsQueueUrl" in report["schedule_queues"]


def test_an_order_runs_through_the_new_step_and_the_new_consumer_once(report: dict):
    run = report["run"]
    assert run["execution"] == "SUCCEEDED"
    assert run["entered"].index("ScreenOrder") == run["entered"].index("RecordLedger") + 1
    assert run["order"]["status"] == "COMPLETED"
    assert run["order"]["steps"]["ScreenOrder"] == "DONE"
    assert run["consumer_items"].count("receipt") == 1
    assert run["consumer_invocations"] >= 1
    assert run["violations"] == []


def test_the_new_route_is_in_the_document_the_template_and_answered_by_the_function(report: dict):
    assert report["documented"]["/orders/{order_id}/status"] == ["get"]
    assert ["GET", "/orders/{order_id}/status"] in report["template_methods"]
    answer = report["run"]["route_answer"]
    assert answer["status"] == 200
    assert answer["body"]["status"] == "COMPLETED"
    assert report["run"]["unknown_order_answer"]["status"] == 404
    assert report["run"]["unknown_order_answer"]["body"]["error"] == "OrderNotFound"
