"""wallet-api's hooks for the lab (`Service.proof`; the lab's `ops.service` lists the hooks): the
accounts' opening balances it seeds, and a request of each way a transfer ends.

`completed`: a funded source, an amount the provider pays; `insufficient-funds`: a source that
holds nothing; `payout-refused`: a funded source, an amount above the provider's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError
from reliability.errors import error_code

from wallet_api.domain import balance_key
from wallet_api.provider import PAYOUT_LIMIT

FUNDED = 10_000_000
EMPTY = "acct-empty"
# Every account a request below debits, with its opening balance.
OPENING_BALANCES: Mapping[str, int] = {
    **{f"acct-{n}": FUNDED for n in range(1, 9)},
    EMPTY: 0,
}
_BODIES: dict[str, dict[str, Any]] = {
    "completed": {"source": "acct-1", "target": "acct-2", "amount": 1_250},
    "insufficient-funds": {"source": EMPTY, "target": "acct-2", "amount": 500},
    "payout-refused": {"source": "acct-3", "target": "acct-4", "amount": PAYOUT_LIMIT + 1},
}


def seed(dynamodb: Any, tables: Mapping[str, str], *, reset: bool = False) -> int:
    """The opening balances into the balances table (by short name in `tables`); an account that
    exists keeps its balance unless `reset`. Returns how many it wrote."""
    written = 0
    for account, balance in OPENING_BALANCES.items():
        condition = {} if reset else {"ConditionExpression": "attribute_not_exists(pk)"}
        try:
            dynamodb.put_item(
                TableName=tables["balances"],
                Item={**balance_key(account), "balance": {"N": str(balance)}},
                **condition,
            )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            continue
        written += 1
    return written


def request(outcome: str, index: int = 0, variant: int = 0) -> dict[str, Any]:
    """Transfer `index` of `outcome` (another target account per index); `variant` adds cents
    (another payload, same outcome)."""
    body = dict(_BODIES[outcome])
    if index:
        body["target"] = f"{body['target']}-{index}"
    body["amount"] += variant
    return body
