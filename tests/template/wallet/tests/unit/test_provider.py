"""The fake payout provider behaves like a real one: a key is remembered for its lifetime only,
after which the same key pays again; a run's payout is found by its reference forever."""

from __future__ import annotations

from typing import Any

from wallet_api.provider import FakeProvider

from support import NOW, physical

ENTITY_ID = "tr-0123456789abcdef0123456789abcdef"
LIFETIME = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


def _provider(dynamodb: Any, clock: Clock) -> FakeProvider:
    return FakeProvider(
        client=dynamodb, table=physical("payouts"), clock=clock, key_lifetime_seconds=LIFETIME
    )


def _pay(provider: FakeProvider, key: str = "k-1", reference: str = "dev.tr-1.r1") -> Any:
    return provider.pay(
        idempotency_key=key, entity_id=ENTITY_ID, reference=reference, target="acct-2", amount=5
    )


def test_a_remembered_key_answers_the_payout_it_made(dynamodb: Any) -> None:
    provider = _provider(dynamodb, Clock())
    assert _pay(provider) == _pay(provider)
    assert len(dynamodb.scan(TableName=physical("payouts"))["Items"]) == 1


def test_a_forgotten_key_pays_again_and_the_reference_still_finds_the_first(dynamodb: Any) -> None:
    clock = Clock()
    provider = _provider(dynamodb, clock)
    first = _pay(provider)

    clock.now += LIFETIME + 1
    second = _pay(provider)

    assert second.payout_id != first.payout_id
    assert len(dynamodb.scan(TableName=physical("payouts"))["Items"]) == 2
    assert provider.find(entity_id=ENTITY_ID, reference="dev.tr-1.r1") == first
    assert provider.find(entity_id=ENTITY_ID, reference="dev.tr-1.r2") is None
