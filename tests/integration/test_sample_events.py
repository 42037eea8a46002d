"""Every sample event in events/ runs through its function's real handler (the local stage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.invariants import check
from simulator.cloud import EVENTS_DIR, InProcessCloud, LambdaError

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

API_EXPECTED = {
    "create_order.json": 202,
    "create_order_duplicate.json": 202,
    "create_order_conflict.json": 422,
    "create_order_missing_key.json": 400,
    "create_order_malformed_body.json": 400,
    "create_order_invalid_body.json": 422,
    "create_order_unknown_sku.json": 422,
    "create_order_declined.json": 202,
    "get_order.json": 200,
    "get_order_unknown.json": 404,
}
HAPPY_STEPS = ["reserve-inventory", "charge-payment", "record-ledger", "publish-events", "mark-completed"]
COMPENSATION_STEPS = ["release-inventory", "mark-failed"]


def _event(path: str) -> dict:
    return json.loads((EVENTS_DIR / path).read_text())


def _prefix(function: str) -> str:
    return "".join(part.capitalize() for part in function.split("-"))


def test_every_sample_event_has_a_check():
    folders = {p.parent.name for p in EVENTS_DIR.glob("*/*.json")}
    assert folders == {
        "api",
        "worker",
        "notify",
        "analytics",
        "sweep-accepted",
        *HAPPY_STEPS,
        *COMPENSATION_STEPS,
    }
    assert {p.name for p in (EVENTS_DIR / "api").glob("*.json")} == set(API_EXPECTED)


def test_sample_events_run_through_their_handlers(cloud: InProcessCloud):
    # API: every request answers as documented, JSON bodies throughout
    for name, status in API_EXPECTED.items():
        response = cloud.invoke("Api", _event(f"api/{name}"))
        assert response["statusCode"] == status, (name, response)
        body = json.loads(response["body"])
        if status >= 400:
            assert set(body) == {"error", "message"}, (name, body)

    # Steps, happy path: fresh runs the effect, already_fenced replays the stored result
    charged = None
    for function in HAPPY_STEPS:
        event, replay = _event(f"{function}/fresh.json"), _event(f"{function}/already_fenced.json")
        if charged is not None:
            # The samples carry a placeholder charge id; the chain carries the real charge on (the
            # invariants compare the ledger's charge id with the provider's succeeded charge).
            for later in (event, replay):
                later["results"]["ChargePayment"] = charged
        fresh = cloud.invoke(_prefix(function), event)
        again = cloud.invoke(_prefix(function), replay)
        assert again == fresh, function
        if function == "charge-payment":
            charged = fresh
    order_id = _event("reserve-inventory/fresh.json")["order_id"]
    status = cloud.api("GET", f"/orders/{order_id}").body
    assert status["status"] == "COMPLETED"
    assert set(status["steps"].values()) == {"DONE"}  # each step's fence: done once, replayed after
    assert len(status["charges"]) == 1

    # Steps, compensation path: the declined order's charge raises the business error Catch routes
    cloud.invoke("ReserveInventory", _event("reserve-inventory/declined_order.json"))
    for _ in range(2):
        with pytest.raises(LambdaError) as declined:
            cloud.invoke("ChargePayment", _event("charge-payment/declined.json"))
        assert declined.value.error_type == "PaymentDeclined"
    for function in COMPENSATION_STEPS:
        fresh = cloud.invoke(_prefix(function), _event(f"{function}/fresh.json"))
        assert cloud.invoke(_prefix(function), _event(f"{function}/already_fenced.json")) == fresh

    # Worker: a duplicate and a poison record in one batch; nothing retried. The sample steps above
    # already finished run 1 by hand, so the worker starts no execution for that finished run
    # (docs/how-it-works.md, "Messages and consumer dedup"): it records the run's execution ARN and
    # acknowledges
    assert cloud.invoke("Worker", _event("worker/batch.json")) == {"batchItemFailures": []}
    assert cloud.invoke("Worker", _event("worker/single.json")) == {"batchItemFailures": []}
    assert cloud.executions() == []
    assert cloud.api("GET", f"/orders/{order_id}").body["execution_arn"].endswith(f":{order_id}-r1")
    (poison,) = cloud.messages("OrdersDlqUrl")
    assert poison["reason"].startswith("unparseable body")

    # Consumers: a redelivered event applies once; the poison record is dead-lettered
    for consumer in ("notify", "analytics"):
        assert cloud.invoke(_prefix(consumer), _event(f"{consumer}/batch.json")) == {"batchItemFailures": []}
        assert len(cloud.messages(f"{_prefix(consumer)}DlqUrl")) == 1

    # Everything settles (the queued messages dedupe against what the samples did) and holds
    cloud.settle()
    # Sweeper: every order has left ACCEPTED, so the scheduled sweep re-sends nothing
    assert cloud.invoke("SweepAccepted", _event("sweep-accepted/scheduled.json")) == {"resent": []}
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    assert sorted(row.verdict for row in report.rows) == ["compensated", "completed"]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(EVENTS_DIR)) for p in EVENTS_DIR.glob("*/*.json")))
def test_sample_events_are_valid_json_objects(path: str):
    assert isinstance(json.loads(Path(EVENTS_DIR, path).read_text()), dict)
