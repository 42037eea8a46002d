"""wallet-api's hooks for the lab (`Service.proof`; the lab's `ops.service` lists the hooks): the
accounts' opening balances it seeds, a request of each way a transfer ends, and its own
invariants (`violations`): the payouts it counts itself (`COUNTS`), and money conserved.

`completed`: a funded source, an amount the provider pays; `insufficient-funds`: a source that
holds nothing; `payout-refused`: a funded source, an amount above the provider's limit.
Only the lab and the tests import this module; it needs nothing of the lab (the counts' shape is
`{transfer id: {run: Counter}}`, the items a table's scan as plain values).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError
from reliability.errors import error_code
from reliability.keys import key_parts

from wallet_api.domain import ACCOUNT_PARTITION, BALANCE_SK, CREDIT, DEBIT, ENTITY, REVERSAL, balance_key
from wallet_api.provider import PAYOUT, PAYOUT_LIMIT
from wallet_api.saga import PROVIDER_PORT

Items = Callable[[str], list[dict[str, Any]]]
Counts = Mapping[str, Mapping[int, Counter[str]]]
PAYOUT_STEP = "Payout"
# The entries whose effects this hook counts: a payout is the provider's item, not a declared one.
COUNTS = frozenset({PAYOUT_STEP})
# How the lab names a provider's refusal of a step's call (`ops.invariants.effects.refused`).
REFUSED = f"{PAYOUT_STEP} refused"
# Each movement item's sign on its account's balance.
MOVEMENTS = {DEBIT: -1, CREDIT: 1, REVERSAL: 1}

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


def violations(items: Items, counts: Counts) -> list[str]:
    """The hook: each payout counted under its run (a refused one as the provider's refusal), then
    every account's balance held to its opening balance and the movements written on it."""
    head = f"{ENTITY.name}#"
    for item in items(str(PROVIDER_PORT)):
        pk, sk = str(item.get("pk", "")), str(item.get("sk", ""))
        if pk.startswith(head) and sk.startswith(PAYOUT):
            parts = key_parts(str(item.get("reference", "")))
            effect = PAYOUT_STEP if item.get("status") == "PAID" else REFUSED
            counts[pk.removeprefix(head)][parts.run if parts else 0][effect] += 1
    return money_conserved(items("balances"))


def money_conserved(balances: list[dict[str, Any]]) -> list[str]:
    """Each account holds its opening balance plus the credits and reversals, minus the debits,
    written on it: money moves only with the item that says so, and is never made or lost."""
    expected: dict[str, int] = defaultdict(int)
    held: dict[str, int] = {}
    for item in balances:
        pk, sk = str(item.get("pk", "")), str(item.get("sk", ""))
        if pk.startswith(ACCOUNT_PARTITION) and sk == BALANCE_SK:
            account = pk.removeprefix(ACCOUNT_PARTITION)
            held[account] = int(item.get("balance", 0))
            expected[account] += OPENING_BALANCES.get(account, 0)
        for prefix, sign in MOVEMENTS.items():
            if sk.startswith(prefix) and "account" in item:
                expected[str(item["account"])] += sign * int(item.get("amount", 0))
    return [
        f"account {account} holds {held.get(account, 0)}, its movements say {amount}"
        for account, amount in sorted(expected.items())
        if held.get(account, 0) != amount
    ]


# The mutants no world of the lab's search tells apart here, and why. Searched: the wallet's full
# make chaos, 0/5 seeds of 100 worlds each (base seed 1795755073), 0/1 of 100 (base 1795760993).
# Not among them, though their effects look idempotent: MarkFailed's fence (a redrive after a
# rerun, `chaos.races`) and the audit consumer's dedup (a copy's put-once entry is refused, and the
# refusal fails the delivery into the DLQ: `chaos.foreign.applied_and_dead_lettered`).
_SEARCHED = " (searched: 0/5 seeds of 100 worlds, base seed 1795755073; 0/1, base seed 1795760993)"
EQUIVALENT: dict[str, str] = {
    "fence-off:Complete": "its effect sets the transfer's status, a value: a second attempt of a run "
    "sets the same value again, and no run follows one that reached Complete (`make rerun` needs "
    "FAILED, which only MarkFailed sets, off Complete's path)" + _SEARCHED,
}
# The mutants a world tells apart that the search seldom reaches, and why (`Mutant.blind`).
# (None now: fence-off:MarkFailed is caught by the search's operator races, `chaos.races`.)
BLIND: dict[str, str] = {}


def mutants(derived: tuple[Any, ...]) -> tuple[Any, ...]:
    """The lab's mutants of the wallet, those equivalent or blind here marked so."""
    return tuple(
        replace(m, equivalent=EQUIVALENT.get(m.name, m.equivalent), blind=BLIND.get(m.name, m.blind))
        for m in derived
    )
