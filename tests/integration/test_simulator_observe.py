"""simulator.observe: every DynamoDB write as the items it changed, and who made it."""

from __future__ import annotations

import contextlib

from simulator.cloud import InProcessCloud
from simulator.observe import Caller, Write, set_caller


def test_an_observer_sees_before_and_after_of_each_item_a_request_changed(cloud: InProcessCloud) -> None:
    # Given an observer
    seen: list[Write] = []
    cloud.write_observers.append(seen.append)
    table = cloud.outputs["FenceTableName"]

    # When a function's invocation writes an item, then a conditional write fails
    set_caller(Caller("retrysafe-local-charge-payment", "inv-1"))
    try:
        cloud.dynamodb.put_item(TableName=table, Item={"id": {"S": "k"}, "state": {"S": "IN_PROGRESS"}})
        with contextlib.suppress(cloud.dynamodb.exceptions.ConditionalCheckFailedException):
            cloud.dynamodb.put_item(
                TableName=table, Item={"id": {"S": "k"}}, ConditionExpression="attribute_not_exists(id)"
            )
    finally:
        set_caller(None)

    # Then the first write shows the item appearing, made by that invocation; the failed one changed nothing
    first, second = seen
    assert first.ok
    assert first.caller == Caller("retrysafe-local-charge-payment", "inv-1")
    (change,) = first.changes
    assert (change.table, change.key, change.before) == (table, "k", None)
    assert change.after == {"id": {"S": "k"}, "state": {"S": "IN_PROGRESS"}}
    assert not second.ok
    assert second.changes == ()
