"""The read side of the stack outputs contract follows what infra writes, and names every queue."""

from __future__ import annotations

from typing import Any

import pytest

from infra.sizing import QUEUE_CONSUMERS
from infra.sizing import pascal as infra_pascal
from ops.invariants.stores import Stores
from ops.redrive import main as redrive_main
from ops.stack_outputs import QUEUES, dlq_output, pascal


def test_pascal_is_infras_and_the_queues_are_the_ones_infra_builds():
    for name in ("reserve-inventory", "notify", "a-b-c"):
        assert pascal(name) == infra_pascal(name)
    assert set(QUEUES) == set(QUEUE_CONSUMERS)


def test_a_consumer_added_to_the_declaration_is_redriven_and_scanned(monkeypatch: Any):
    # Given one more declared consumer (the recipe's "receipts")
    monkeypatch.setattr("ops.invariants.stores.QUEUES", (*QUEUES, "receipts"))
    outputs = {dlq_output(q): f"url-{q}" for q in (*QUEUES, "receipts")}
    outputs.update({f"{t}TableName": t for t in ("Orders", "Inventory", "Payments", "Ledger")})
    outputs.update({"NotificationsTableName": "n", "AggregatesTableName": "a"})
    # Then the invariant checker reads its DLQ with the others
    stores = Stores.from_outputs(outputs, client=lambda _service: None)
    assert stores.dlq_urls["receipts"] == "url-receipts"
    assert set(stores.dlq_urls) == {*QUEUES, "receipts"}


def test_redrive_dlq_offers_every_declared_queue(capsys: Any, monkeypatch: Any):
    # Given one more declared consumer (the recipe's "receipts")
    monkeypatch.setattr("ops.redrive.QUEUES", (*QUEUES, "receipts"))
    # Then `make redrive-dlq QUEUE=` offers it with the others
    with pytest.raises(SystemExit):
        redrive_main(["dlq", "--help"])
    shown = capsys.readouterr().out
    assert all(queue in shown for queue in (*QUEUES, "receipts"))
