"""The orders table's adapter (`order#<id>` / `order`, `orders.items`): create, read, the run's
status transitions (running, next run) and the accepted orders the sweeper re-sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from orders.adapters._dynamo import CONDITION_FAILED, from_item, now_iso, to_item
from orders.domain import Line, Order, OrderStatus
from orders.errors import OrderConflict, RerunRefused
from orders.items import ORDER_SK, key, order_pk
from reliability import Write
from reliability.calltoken import CallToken
from reliability.errors import error_code, transient_errors


def _order_item(order: Order) -> dict[str, Any]:
    return {
        "pk": order_pk(order.order_id),
        "sk": ORDER_SK,
        "order_id": order.order_id,
        "customer_id": order.customer_id,
        "currency": order.currency,
        "lines": order.lines_as_dicts(),
        "total_cents": order.total_cents,
        "idempotency_key": order.idempotency_key,
        "created_at": order.created_at,
        "owner": order.owner,
        "run": order.run,
        "status": order.status.value,
        "execution_arn": order.execution_arn,
    }


def _order_from(item: Mapping[str, Any]) -> Order:
    return Order(
        order_id=item["order_id"],
        customer_id=item["customer_id"],
        currency=item["currency"],
        lines=tuple(
            Line(sku=line["sku"], quantity=line["quantity"], unit_price_cents=line["unit_price_cents"])
            for line in item["lines"]
        ),
        idempotency_key=item["idempotency_key"],
        created_at=item["created_at"],
        owner=item.get("owner", ""),
        run=item.get("run", 1),
        status=OrderStatus(item["status"]),
        execution_arn=item.get("execution_arn"),
    )


class DynamoOrderStore:
    """Orders on the orders table. Implements `OrderStore`."""

    def __init__(self, *, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, order: Order) -> Order:
        try:
            with transient_errors("create order"):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(_order_item(order)),
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            existing = _order_from(from_item(error.response.get("Item", {})))
            if not existing.same_order_as(order):
                raise OrderConflict(f"order {order.order_id} already holds a different order") from error
            return existing
        return order

    def get(self, order_id: str) -> Order | None:
        with transient_errors("get order"):
            item = self._client.get_item(
                TableName=self._table, Key=key(order_pk(order_id), ORDER_SK), ConsistentRead=True
            ).get("Item")
        return _order_from(from_item(item)) if item else None

    def accepted_before(self, created_before: str) -> list[Order]:
        # A paginated Scan with a filter: it reads the whole table on every sweep, which is fine
        # for a template's volumes. Next step at scale: a sparse GSI (an attribute present only
        # while ACCEPTED, sorted by time) so the sweep is a Query.
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "sk = :order AND #status = :accepted AND created_at < :before",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":order": {"S": ORDER_SK},
                ":accepted": {"S": OrderStatus.ACCEPTED.value},
                ":before": {"S": created_before},
            },
            "ConsistentRead": True,
        }
        found: list[Order] = []
        while True:
            with transient_errors("scan accepted orders"):
                page = self._client.scan(**kwargs)
            found.extend(_order_from(from_item(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def mark_running(self, order_id: str, *, run: int, execution_arn: str | None) -> None:
        """RUNNING (+ execution ARN) for the order's current run; never moves a finished order back
        (the saga may be quicker than this write: then only the ARN is recorded), never touches
        another run. Without an ARN (an Express run, marked before it starts) only the status."""
        values: dict[str, Any] = {
            ":running": OrderStatus.RUNNING.value,
            ":accepted": OrderStatus.ACCEPTED.value,
            ":run": run,
        }
        update = "SET #s = :running"
        if execution_arn is not None:
            values[":arn"] = execution_arn
            update += ", execution_arn = :arn"
        try:
            with transient_errors("mark running"):
                self._client.update_item(
                    TableName=self._table,
                    Key=key(order_pk(order_id), ORDER_SK),
                    UpdateExpression=update,
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s IN (:accepted, :running)",
                    ExpressionAttributeNames={"#s": "status", "#r": "run"},
                    ExpressionAttributeValues=to_item(values),
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            if execution_arn is not None:
                self.record_execution(order_id, run=run, execution_arn=execution_arn)

    def record_execution(self, order_id: str, *, run: int, execution_arn: str) -> None:
        try:
            with transient_errors("record execution arn"):
                self._client.update_item(
                    TableName=self._table,
                    Key=key(order_pk(order_id), ORDER_SK),
                    UpdateExpression="SET execution_arn = :arn",
                    ConditionExpression="attribute_exists(pk) AND #r = :run",
                    ExpressionAttributeNames={"#r": "run"},
                    ExpressionAttributeValues=to_item({":arn": execution_arn, ":run": run}),
                )
        except ClientError as stale:
            if error_code(stale) != CONDITION_FAILED:
                raise
            # The order moved on to a later run meanwhile: this run's ARN is history.

    def start_next_run(self, order_id: str, *, run: int) -> Order:
        """Run N FAILED -> run N+1 ACCEPTED, or RerunRefused. The write carries this call's token,
        so the SDK's resend of a transition whose answer was lost finds its own write and answers
        the order as it is now, instead of refusing the run the transition began."""
        token = CallToken()
        try:
            with transient_errors("start next run"):
                response = self._client.update_item(
                    TableName=self._table,
                    Key=key(order_pk(order_id), ORDER_SK),
                    UpdateExpression=f"SET #r = :next, #s = :accepted, accepted_at = :at, {CallToken.SET} "
                    "REMOVE execution_arn, finished_at",
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s = :failed",
                    ExpressionAttributeNames={"#s": "status", "#r": "run", **token.names},
                    ExpressionAttributeValues={
                        **to_item(
                            {
                                ":next": run + 1,
                                ":run": run,
                                ":accepted": OrderStatus.ACCEPTED.value,
                                ":failed": OrderStatus.FAILED.value,
                                ":at": now_iso(),
                            }
                        ),
                        **token.values,
                    },
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            old = error.response.get("Item")
            if not old:
                raise RerunRefused(f"no order {order_id!r}") from error
            if token.wrote(old):
                return _order_from(from_item(old))
            current = from_item(old)
            raise RerunRefused(
                f"order {order_id} is {current['status']} on run {current.get('run', 1)}; run "
                f"{run + 1} may start only after run {run} ended FAILED"
            ) from error
        return _order_from(from_item(response["Attributes"]))

    def status_write(self, order_id: str, status: OrderStatus) -> Write:
        return Write(
            entry={
                "Update": {
                    "TableName": self._table,
                    "Key": key(order_pk(order_id), ORDER_SK),
                    "UpdateExpression": "SET #s = :status, finished_at = :at",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": to_item({":status": status.value, ":at": now_iso()}),
                }
            }
        )
