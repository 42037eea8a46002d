"""Simulated time: `cloud.advance` applies DynamoDB TTL deletion as DynamoDB does."""

from __future__ import annotations

from simulator.cloud import InProcessCloud

DAY = 86_400


def _put(cloud: InProcessCloud, table_output: str, item_id: str, expiration: float | None) -> None:
    item = {"id": {"S": item_id}}
    if expiration is not None:
        item["expiration"] = {"N": str(int(expiration))}
    cloud.dynamodb.put_item(TableName=cloud.outputs[table_output], Item=item)


def _ids(cloud: InProcessCloud, table_output: str) -> set[str]:
    items = cloud.dynamodb.scan(TableName=cloud.outputs[table_output])["Items"]
    return {item["id"]["S"] for item in items}


def test_advance_deletes_items_whose_ttl_has_passed_and_keeps_the_rest(cloud: InProcessCloud) -> None:
    # Given records on both TTL tables: one expiring in an hour, one in two days, one without TTL
    now = cloud.clock()
    for table in ("IdempotencyTableName", "FenceTableName"):
        _put(cloud, table, "soon", now + 3600)
        _put(cloud, table, "later", now + 2 * DAY)
        _put(cloud, table, "forever", None)

    # When a day passes
    expired = cloud.advance(DAY)

    # Then only the items past their TTL are gone, on each table with a TimeToLiveSpecification
    assert expired == 2
    assert _ids(cloud, "IdempotencyTableName") == {"later", "forever"}
    assert _ids(cloud, "FenceTableName") == {"later", "forever"}
    assert cloud.expired_items == 2


def test_an_item_rewritten_with_a_later_ttl_is_kept(cloud: InProcessCloud) -> None:
    # Given an item whose TTL has passed but that nobody has deleted yet (DynamoDB is lazy)
    now = cloud.clock()
    _put(cloud, "IdempotencyTableName", "renewed", now + 60)
    cloud.clock.advance(120)
    assert _ids(cloud, "IdempotencyTableName") == {"renewed"}  # still readable until swept

    # When it is rewritten with a later TTL before the sweep
    _put(cloud, "IdempotencyTableName", "renewed", cloud.clock() + DAY)
    cloud.advance(0)

    # Then it stays
    assert _ids(cloud, "IdempotencyTableName") == {"renewed"}


def test_tables_without_ttl_are_untouched(cloud: InProcessCloud) -> None:
    # Given an order item with an `expiration`-like attribute on a table without TTL
    table = cloud.outputs["OrdersTableName"]
    cloud.dynamodb.put_item(
        TableName=table, Item={"pk": {"S": "x"}, "sk": {"S": "y"}, "expiration": {"N": "1"}}
    )

    # When time passes
    cloud.advance(30 * DAY)

    # Then the item is still there
    assert cloud.dynamodb.get_item(TableName=table, Key={"pk": {"S": "x"}, "sk": {"S": "y"}}).get("Item")
