"""The transfers table: the library's run store (`reliability.run_store.DynamoRunStore`) over
the transfer's item, `<entity>#<id>` / `transfer`, written once when it is accepted.
Its run attributes (`status`, `run`, `execution_arn`, ...) are the run model's; its terms are ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reliability.run_store import DynamoRunStore

from wallet_api import domain
from wallet_api.domain import ENTITY, Status

Store = DynamoRunStore[domain.Transfer]


def encode(entity: domain.Transfer) -> dict[str, Any]:
    return {
        ENTITY.id_field: entity.entity_id,
        "source": entity.source,
        "target": entity.target,
        "amount": entity.amount,
        "idempotency_key": entity.idempotency_key,
        "created_at": entity.created_at,
        "owner": entity.owner,
        "run": entity.run,
        "status": entity.status.value,
        "execution_arn": entity.execution_arn,
    }


def decode(values: Mapping[str, Any]) -> domain.Transfer:
    reason = values.get("reason")
    return domain.Transfer(
        entity_id=str(values[ENTITY.id_field]),
        source=str(values["source"]),
        target=str(values["target"]),
        amount=int(values["amount"]),
        idempotency_key=str(values["idempotency_key"]),
        created_at=str(values["created_at"]),
        owner=str(values["owner"]),
        run=int(values.get("run", 1)),
        status=Status(values["status"]),
        execution_arn=values.get("execution_arn"),
        reason=None if reason is None else str(reason),
    )


def store(*, client: Any, table: str) -> Store:
    return DynamoRunStore(client=client, table_name=table, entity=ENTITY, encode=encode, decode=decode)
