"""What AWS does as simulated time passes: DynamoDB TTL deletion.

moto stores a table's TimeToLiveSpecification and never enforces it. DynamoDB deletes an item
at some point after its TTL attribute (epoch seconds) has passed, as a service delete that
does not happen if the item was rewritten with a later TTL meanwhile; until then reads still
see it. The simulator deletes lazily, when the clock is moved (`InProcessCloud.advance`), every
item whose TTL is at or before the new time, each with a condition that it is still expired.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TtlTable:
    name: str
    attribute: str
    keys: tuple[str, ...]


def ttl_tables(data_template: Mapping[str, Any]) -> list[TtlTable]:
    """Every table of the template whose TimeToLiveSpecification is enabled."""
    tables = []
    for resource in data_template.get("Resources", {}).values():
        if resource.get("Type") != "AWS::DynamoDB::Table":
            continue
        properties = resource["Properties"]
        spec = properties.get("TimeToLiveSpecification") or {}
        if spec.get("Enabled"):
            keys = tuple(k["AttributeName"] for k in properties["KeySchema"])
            tables.append(TtlTable(properties["TableName"], spec["AttributeName"], keys))
    return tables


def delete_expired(dynamodb: Any, table: TtlTable, now: float) -> int:
    """Delete the items of `table` whose TTL attribute is <= `now`; returns how many."""
    deleted = 0
    names = {"#ttl": table.attribute}
    values = {":now": {"N": str(int(now))}}
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(
        TableName=table.name,
        FilterExpression="#ttl <= :now",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    ):
        for item in page.get("Items", []):
            try:
                dynamodb.delete_item(
                    TableName=table.name,
                    Key={k: item[k] for k in table.keys},
                    ConditionExpression="#ttl <= :now",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
            except dynamodb.exceptions.ConditionalCheckFailedException:
                continue  # rewritten with a later TTL since the scan: DynamoDB keeps it too
            deleted += 1
    return deleted
