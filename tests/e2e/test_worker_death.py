"""End to end, local cloud only: a Lambda worker process killed by a signal during a step."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid

import pytest

from ops.invariants import Stores, check
from ops.local import control
from tests.e2e.conftest import WAIT_SECONDS, E2ETarget, wait_for

pytestmark = pytest.mark.e2e

ORDER = {"customer_id": "customer-e2e", "currency": "EUR", "items": [{"sku": "sku-5", "quantity": 1}]}


def _history(e2e: E2ETarget, order_id: str) -> list[dict]:
    item = e2e.client("dynamodb").get_item(
        TableName=e2e.output("OrdersTableName"),
        Key={"pk": {"S": f"order#{order_id}"}, "sk": {"S": "order"}},
        ConsistentRead=True,
    )["Item"]
    arn = item.get("execution_arn", {}).get("S")
    if not arn:
        return []
    return e2e.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]


def _entered(events: list[dict], state: str) -> bool:
    return any(e.get("stateEnteredEventDetails", {}).get("name") == state for e in events)


def _status(e2e: E2ETarget, order_id: str) -> str:
    return e2e.api.read(order_id).json["status"]


def _final(e2e: E2ETarget, order_id: str) -> str | None:
    status = _status(e2e, order_id)
    return status if status in {"COMPLETED", "FAILED"} else None


def test_a_worker_killed_by_signal_during_a_step_is_retried_and_the_invariants_hold(
    e2e: E2ETarget, local_control: str
):
    charge = e2e.output("ChargePaymentFunctionName")
    # Given the ChargePayment workers frozen (SIGSTOP), so the step's next invocation is in flight
    # inside a process that will never answer
    pids = control.prewarm(local_control)["workers"][charge]
    assert pids, "no warm ChargePayment worker"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        created = e2e.api.create(ORDER, key=f"e2e-kill-{uuid.uuid4().hex[:12]}")
        assert created.status == 202, created.text
        order_id = created.json["order_id"]
        wait_for(
            "ChargePayment to be invoked", lambda: _entered(_history(e2e, order_id), "ChargePayment") or None
        )
        assert _status(e2e, order_id) == "RUNNING"
    finally:
        # When those workers are killed by signal while the invocation waits on them
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    # Then the local cloud keeps serving: its control answers, another order goes through
    assert control.status(local_control)["endpoint"]
    other = e2e.api.create(
        {**ORDER, "customer_id": "customer-e2e-2"}, key=f"e2e-after-{uuid.uuid4().hex[:12]}"
    )
    assert other.status == 202, other.text

    # And the step is retried by Step Functions (Runtime.ExitError) in a fresh worker: one charge
    assert wait_for("the killed order to finish", lambda: _final(e2e, order_id)) == "COMPLETED"
    failures = [e for e in _history(e2e, order_id) if e["type"] == "LambdaFunctionFailed"]
    assert failures, "the killed invocation left no failure in the execution history"
    assert "Runtime.ExitError" in json.dumps(failures[0], default=str)
    assert len(e2e.api.read(order_id).json["charges"]) == 1
    assert wait_for("the other order to finish", lambda: _final(e2e, other.json["order_id"])) == "COMPLETED"

    # And every invariant holds once the consumers caught up
    stores = Stores.from_outputs(e2e.outputs, e2e.client)
    deadline = time.monotonic() + WAIT_SECONDS
    report = check(stores)
    while not report.ok and time.monotonic() < deadline:
        time.sleep(1.0)
        report = check(stores)
    assert report.ok, report.to_text()
