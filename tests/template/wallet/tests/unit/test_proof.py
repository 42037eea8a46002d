"""The wallet's own invariants (`proof.violations`, the lab's hook): each payout counted under
its run, a refusal apart; money conserved, so a balance that moved without the item saying so is
a violation."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from reliability.keys import execution_token

from wallet_api.domain import balance_key, key
from wallet_api.proof import OPENING_BALANCES, REFUSED, seed, violations
from wallet_api.provider import PAYOUT_LIMIT, FakeProvider

from support import STAGE, physical

ENTITY_ID = "tr-0123456789abcdef0123456789abcdef"


def _scans(dynamodb: Any) -> Any:
    def items(table: str) -> list[dict[str, Any]]:
        found = dynamodb.scan(TableName=physical(table))["Items"]
        return [{k: next(iter(v.values())) for k, v in item.items()} for item in found]

    return items


def _counts() -> Any:
    return defaultdict(lambda: defaultdict(Counter))


def test_each_payout_counts_under_its_run_and_a_refusal_apart(dynamodb: Any) -> None:
    provider = FakeProvider(client=dynamodb, table=physical("payouts"))
    for run, amount in ((1, PAYOUT_LIMIT + 1), (2, 10)):
        reference = execution_token(stage=STAGE, business_id=ENTITY_ID, run=run)
        provider.pay(
            idempotency_key=f"k-{run}", entity_id=ENTITY_ID, reference=reference, target="t", amount=amount
        )
    counts = _counts()

    assert violations(_scans(dynamodb), counts) == []
    assert counts[ENTITY_ID][1] == Counter({REFUSED: 1})
    assert counts[ENTITY_ID][2] == Counter({"Payout": 1})


def test_a_balance_that_moved_without_its_movement_item_is_a_violation(dynamodb: Any) -> None:
    seed(dynamodb, {"balances": physical("balances")})
    assert violations(_scans(dynamodb), _counts()) == []
    dynamodb.put_item(
        TableName=physical("balances"),
        Item={**key(ENTITY_ID, "debit#dev.x.r1"), "account": {"S": "acct-1"}, "amount": {"N": "7"}},
    )
    debited = OPENING_BALANCES["acct-1"] - 7
    assert violations(_scans(dynamodb), _counts()) == [
        f"account acct-1 holds {OPENING_BALANCES['acct-1']}, its movements say {debited}"
    ]
    dynamodb.update_item(
        TableName=physical("balances"),
        Key=balance_key("acct-1"),
        UpdateExpression="SET balance = :b",
        ExpressionAttributeValues={":b": {"N": str(debited)}},
    )
    assert violations(_scans(dynamodb), _counts()) == []
