"""Where the invariant checker reads, and how: whole tables (consistent scans, plain values), dead
letters peeked without consuming them (every queue the service declares), and the saga step
records of an entity's run (wherever the declaration puts them: `ops.service.record_at`)."""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from ops.service import record_tables, service
from ops.stack_outputs import dlq_output, table_names
from reliability.declaration import FENCES, Service
from reliability.keys import execution_token

_deserializer = TypeDeserializer()
_DLQ_PEEK_ROUNDS = 10


@dataclass(frozen=True)
class Stores:
    """Where to read: boto3 clients and the physical names (stack outputs contract)."""

    dynamodb: Any
    sqs: Any
    # Each table's physical name by its short name (the declared tables, and `fences`).
    tables: Mapping[str, str]
    # Every declared queue's DLQ by the queue's short name (`Service.queues`).
    dlq_urls: Mapping[str, str] = field(default_factory=dict)
    # What "now" is for the stores (the simulator's clock when time is simulated).
    clock: Callable[[], float] = time.time
    # The service whose tables these are (default: `ops.service.service()`).
    declared: Service = field(default_factory=service)

    @classmethod
    def from_outputs(
        cls,
        outputs: Mapping[str, str],
        client: Callable[[str], Any],
        clock: Callable[[], float] = time.time,
        declared: Service | None = None,
    ) -> Stores:
        declared = declared or service()
        return cls(
            dynamodb=client("dynamodb"),
            sqs=client("sqs"),
            tables=table_names(declared, outputs),
            dlq_urls={q: outputs[dlq_output(q)] for q in declared.queues if dlq_output(q) in outputs},
            clock=clock,
            declared=declared,
        )


@dataclass(frozen=True)
class DeadLetter:
    queue: str
    message_id: str
    entity_id: str | None  # the business entity its body names (`<entity>_id`)
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


def peek_dead_letters(
    sqs: Any, queue_url: str, queue: str, *, id_field: str | None = None
) -> list[DeadLetter]:
    """Read a DLQ without consuming it (visibility 0, deduplicated by message id); each letter's
    entity is its body's `id_field` (default: the declared entity's, `<name>_id`)."""
    id_field = id_field or service().entity.id_field
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
                entity_id=_body_entity_id(body, id_field),
                reason=(attributes.get("reason") or {}).get("StringValue"),
                source=(attributes.get("source") or {}).get("StringValue"),
                body=body,
            )
        if not new:
            break
    return list(seen.values())


def _body_entity_id(body: str, id_field: str) -> str | None:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return None
    value = data.get(id_field) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def table_scans(stores: Stores) -> Callable[[str], list[dict[str, Any]]]:
    """Each table's consistent scan by its short name (a declared table or `fences`), read once
    however many rules read it (an absent table, such as no fence table, reads as empty)."""

    @functools.cache
    def items(table: str) -> list[dict[str, Any]]:
        name = stores.tables.get(table)
        return scan(stores.dynamodb, name) if name else []

    return items


def step_records(
    items: Callable[[str], list[dict[str, Any]]], declared: Service
) -> dict[str, dict[str, str]]:
    """Saga step records by execution token, {token: {step: state}}, each read where the
    declaration says its step's record lives: the fence table (TTL may have deleted some) or the
    business items that carry one (as long as the item lives); `items` scans a table by its short
    name (`table_scans`)."""
    carriers = {s.name: s.record.table for s in declared.steps if s.record is not None}
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for table in record_tables(declared):
        for token, by_step in fences_by_token(items(table)).items():
            for step, state in by_step.items():
                if carriers.get(step, FENCES) == table:
                    found[token][step] = state
    return found


def fences_by_token(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Saga fences by execution token: {token: {step: state}} (TTL may have deleted some)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for item in items:
        if "token" in item and "step" in item and "state" in item:
            out[str(item["token"])][str(item["step"])] = str(item["state"])
    return out


def fences_of(entity_id: str, fences: Mapping[str, dict[str, str]], run: int) -> dict[str, str]:
    """The step records of one run of an entity (found by the run's token, whose first segment is
    the stage)."""
    for token, by_step in fences.items():
        stage = token.split(".", 1)[0]
        if token == execution_token(stage=stage, business_id=entity_id, run=run):
            return by_step
    return {}
