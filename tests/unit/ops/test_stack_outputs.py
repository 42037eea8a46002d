"""The read side of the stack outputs contract follows what infra writes, and the tools offer and
scan every queue the service's declaration names (not a list of the sample's)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from infra.sizing import QUEUE_CONSUMERS
from ops.invariants import Stores, check
from ops.redrive import main as redrive_main
from ops.service import service
from ops.stack_outputs import data_stack_outputs, dlq_output, pascal, table_output
from reliability.cdk.declared import pascal as infra_pascal
from reliability.declaration import Consumer

# The declaration with one more consumer (the recipe's "receipts"), built here, not in the sample
RECEIPTS = Consumer(
    name="receipts", effect="receipts.effects:send", description="send a receipt", tables=("receipts",)
)
WITH_RECEIPTS = replace(
    service(),
    tables=service().tables | {"receipts"},
    consumers=(*service().consumers, RECEIPTS),
)


class _Sqs:
    """A DLQ per URL, each holding one dead letter, peeked (never consumed)."""

    def __init__(self) -> None:
        self.peeked: list[str] = []

    def receive_message(self, *, QueueUrl: str, **_: Any) -> dict[str, Any]:
        self.peeked.append(QueueUrl)
        body = json.dumps({"order_id": "o-1"})
        return {"Messages": [{"MessageId": f"m-{QueueUrl}", "Body": body, "MessageAttributes": {}}]}


class _Dynamo:
    def scan(self, **_: Any) -> dict[str, Any]:
        return {"Items": []}


def test_pascal_is_infras_and_the_queues_are_the_ones_infra_builds():
    for name in ("hold-seat", "send-ticket", "a-b-c"):
        assert pascal(name) == infra_pascal(name)
    assert set(service().queues) == set(QUEUE_CONSUMERS)


def test_a_consumer_added_to_the_declaration_is_scanned_by_the_checker():
    # Given a stack with the declared consumer's DLQ and table
    queues = WITH_RECEIPTS.queues
    outputs = {dlq_output(q): f"url-{q}" for q in queues}
    outputs.update({table_output(t): f"{t}-table" for t in WITH_RECEIPTS.tables})
    sqs = _Sqs()
    clients = {"sqs": sqs, "dynamodb": _Dynamo()}
    # When the invariant checker reads that stack under that declaration
    stores = Stores.from_outputs(outputs, client=clients.__getitem__, declared=WITH_RECEIPTS)
    report = check(stores, allow_in_flight=True)
    # Then it reads the new consumer's DLQ with the others, and its table by its short name
    assert set(stores.dlq_urls) == set(queues)
    assert "url-receipts" in sqs.peeked
    assert "receipts" in {letter.queue for letter in report.dead_letters}
    assert stores.tables["receipts"] == "receipts-table"


def test_redrive_dlq_offers_every_declared_queue(capsys: Any):
    # When `make redrive-dlq` is asked for help under the declaration with one more consumer
    with pytest.raises(SystemExit):
        redrive_main(["dlq", "--help"], declared=WITH_RECEIPTS)
    # Then it offers that consumer's DLQ with the others
    shown = capsys.readouterr().out
    assert all(queue in shown for queue in WITH_RECEIPTS.queues)
    assert "receipts" in shown


def test_the_data_stacks_outputs_follow_the_declaration() -> None:
    # Given the declaration with one more consumer and its table
    outputs = data_stack_outputs(WITH_RECEIPTS)
    # Then the contract the tools, the local cloud and e2e read names them, beside the rest
    receipts = {"ReceiptsQueueUrl", "ReceiptsDlqUrl", "ReceiptsTableName"}
    assert receipts <= outputs
    assert data_stack_outputs(service()) == outputs - receipts
    assert {"IdempotencyTableName", "FenceTableName"} <= outputs
