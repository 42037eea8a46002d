"""One moto world for many clouds (`simulator.world.reusing`): deployed once, and each later cloud
starts from the seeded state, whatever the previous one left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cloud import InProcessCloud, running_cloud
from simulator.world import reusing

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-13", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]}


def _state(cloud: InProcessCloud) -> tuple[int, int, int, int]:
    """(inventory items, orders-table items, messages on the orders queue, executions)."""
    items = {
        name: cloud.dynamodb.scan(TableName=cloud.outputs[name])["Count"]
        for name in ("InventoryTableName", "OrdersTableName")
    }
    queued = cloud.sqs.get_queue_attributes(
        QueueUrl=cloud.outputs["OrdersQueueUrl"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    return items["InventoryTableName"], items["OrdersTableName"], int(queued), len(cloud.executions())


def test_a_reused_world_starts_each_cloud_from_the_seeded_state(assembly: Path) -> None:
    deploys = 0
    original = InProcessCloud.deploy

    def counting_deploy(self: InProcessCloud) -> InProcessCloud:
        nonlocal deploys
        deploys += 1
        return original(self)

    with pytest.MonkeyPatch.context() as patch, reusing():
        patch.setattr(InProcessCloud, "deploy", counting_deploy)
        # Given a cloud that leaves an order, a queued message and an execution behind
        with running_cloud(assembly) as first:
            seeded = _state(first)
            assert first.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "w-1"}).status == 202
            first.send("OrdersQueueUrl", {"order_id": "o-left-behind"})
            first.drain("OrdersQueueUrl", "Worker", max_rounds=1)
            first.wait_all()
            assert _state(first) != seeded
            outputs = dict(first.outputs)

        # When the next cloud is built in the same world
        with running_cloud(assembly) as second:
            # Then it was not deployed again, has the same names, and sees only the seeded state
            assert deploys == 1
            assert second.outputs == outputs
            assert _state(second) == seeded == (20, 0, 0, 0)
            # And it runs an order end to end like a fresh one
            response = second.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "w-1"})
            assert response.status == 202
            assert response.header("Idempotent-Replayed") is None
            second.settle()
            assert second.api("GET", f"/orders/{response.body['order_id']}").body["status"] == "COMPLETED"
