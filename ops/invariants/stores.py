"""Where the invariant checker reads, and how: whole tables (consistent scans, plain values), dead
letters peeked without consuming them, and the saga step records of an order's run (wherever
`orders.items.record_at` puts them)."""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from ops.stack_outputs import QUEUES, dlq_output
from orders import items as layout
from orders.workflow import STEPS
from reliability.keys import execution_token

_deserializer = TypeDeserializer()
_DLQ_PEEK_ROUNDS = 10


@dataclass(frozen=True)
class Stores:
    """Where to read: boto3 clients and the physical names (stack outputs contract)."""

    dynamodb: Any
    sqs: Any
    orders_table: str
    inventory_table: str
    payments_table: str
    ledger_table: str
    notifications_table: str
    aggregates_table: str
    # Every declared queue's DLQ by the queue's short name (`ops.stack_outputs.QUEUES`).
    dlq_urls: Mapping[str, str] = field(default_factory=dict)
    fence_table: str | None = None
    # What "now" is for the stores (the simulator's clock when time is simulated).
    clock: Callable[[], float] = time.time

    @classmethod
    def from_outputs(
        cls, outputs: Mapping[str, str], client: Callable[[str], Any], clock: Callable[[], float] = time.time
    ) -> Stores:
        return cls(
            dynamodb=client("dynamodb"),
            sqs=client("sqs"),
            orders_table=outputs["OrdersTableName"],
            inventory_table=outputs["InventoryTableName"],
            payments_table=outputs["PaymentsTableName"],
            ledger_table=outputs["LedgerTableName"],
            notifications_table=outputs["NotificationsTableName"],
            aggregates_table=outputs["AggregatesTableName"],
            dlq_urls={queue: outputs[dlq_output(queue)] for queue in QUEUES if dlq_output(queue) in outputs},
            fence_table=outputs.get("FenceTableName"),
            clock=clock,
        )


@dataclass(frozen=True)
class DeadLetter:
    queue: str
    message_id: str
    order_id: str | None
    reason: str | None
    source: str | None
    body: str


def scan(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items.extend(
            {k: plain(_deserializer.deserialize(v)) for k, v in item.items()}
            for item in page.get("Items", [])
        )
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if type(value).__name__ == "Decimal":
        return int(value)
    return value


def peek_dead_letters(sqs: Any, queue_url: str, queue: str) -> list[DeadLetter]:
    """Read a DLQ without consuming it (visibility 0, deduplicated by message id)."""
    seen: dict[str, DeadLetter] = {}
    for _ in range(_DLQ_PEEK_ROUNDS):
        response = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        new = [m for m in messages if m["MessageId"] not in seen]
        for message in new:
            attributes = message.get("MessageAttributes") or {}
            body = message.get("Body", "")
            seen[message["MessageId"]] = DeadLetter(
                queue=queue,
                message_id=message["MessageId"],
                order_id=_body_order_id(body),
                reason=(attributes.get("reason") or {}).get("StringValue"),
                source=(attributes.get("source") or {}).get("StringValue"),
                body=body,
            )
        if not new:
            break
    return list(seen.values())


def _body_order_id(body: str) -> str | None:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return None
    value = data.get("order_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def table_scans(stores: Stores) -> Callable[[str], list[dict[str, Any]]]:
    """Each table's consistent scan by its short name (`inventory`, `ledger`, ..., `fences`), read
    once however many rules read it (an absent table, such as no fence table, reads as empty)."""

    @functools.cache
    def items(table: str) -> list[dict[str, Any]]:
        name = stores.fence_table if table == layout.FENCES else getattr(stores, f"{table}_table")
        return scan(stores.dynamodb, name) if name else []

    return items


def step_records(items: Callable[[str], list[dict[str, Any]]]) -> dict[str, dict[str, str]]:
    """Saga step records by execution token, {token: {step: state}}, each read where
    `orders.items.record_at` says its step's record lives: the fence table (TTL may have deleted
    some) or the business items that carry one (as long as the item lives); `items` scans a table
    by its short name (`table_scans`)."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for table in layout.record_tables():
        for token, by_step in fences_by_token(items(table)).items():
            for step, state in by_step.items():
                carrier = layout.carrier_of(step) if step in _STEP_NAMES else None
                if (carrier.table if carrier else layout.FENCES) == table:
                    found[token][step] = state
    return found


_STEP_NAMES = frozenset(step.name for step in STEPS)


def fences_by_token(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Saga fences by execution token: {token: {step: state}} (TTL may have deleted some)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for item in items:
        if "token" in item and "step" in item and "state" in item:
            out[str(item["token"])][str(item["step"])] = str(item["state"])
    return out


def fences_of(
    order: Mapping[str, Any], fences: Mapping[str, dict[str, str]], run: int | None = None
) -> dict[str, str]:
    """The fences of one run of the order (its current run unless `run` says; found by the run's
    token, whose first segment is the stage)."""
    wanted = int(order.get("run", 1)) if run is None else run
    for token, by_step in fences.items():
        stage = token.split(".", 1)[0]
        if token == execution_token(stage=stage, business_id=order["order_id"], run=wanted):
            return by_step
    return {}
