"""The saga's steps run behind their fences on moto (`saga.SAGA.run_step`, the library's runner):
money moves once per run whatever retries, a source without the funds is refused before anything
moves, a refused payout has its debit reversed, an earlier payout is reconciled."""

from __future__ import annotations

from typing import Any

import pytest
from reliability.declaration import StepStatus
from reliability.keys import execution_token
from reliability.record import FenceState
from reliability.runs import FenceStore
from reliability.saga import StepRequest

from wallet_api.domain import CREDIT, DEBIT, REVERSAL, Status, Terms, balance_key, key, workflow_input
from wallet_api.errors import InsufficientFunds, PayoutRefused
from wallet_api.proof import EMPTY, FUNDED, seed
from wallet_api.provider import PAYOUT_LIMIT
from wallet_api.saga import SAGA, StepContext
from wallet_api.workflow import SERVICE

from support import STAGE, SentEvents, physical

ENTITY_ID = "tr-0123456789abcdef0123456789abcdef"
SOURCE, TARGET = "acct-1", "acct-2"


def _state(amount: int, source: str = SOURCE, **extra: Any) -> dict[str, Any]:
    terms = Terms(entity_id=ENTITY_ID, source=source, target=TARGET, amount=amount)
    token = execution_token(stage=STAGE, business_id=ENTITY_ID, run=1)
    return {**workflow_input(terms, token), **extra}


def _run(ctx: StepContext, fences: FenceStore, step: str, state: dict[str, Any]) -> dict[str, Any]:
    request = StepRequest(state=state, attempt_id=f"attempt-{step}", remaining_seconds=20.0)
    return SAGA.run_step(ctx, fences, step, request)


def _items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    return list(dynamodb.scan(TableName=physical(table))["Items"])


def _movements(dynamodb: Any) -> list[str]:
    """The prefixes of the movement items written under the transfer's partition, sorted."""
    partition = key(ENTITY_ID, "")["pk"]["S"]
    items = [item for item in _items(dynamodb, "balances") if item["pk"]["S"] == partition]
    return sorted(item["sk"]["S"].split("#")[0] + "#" for item in items)


def _balance(dynamodb: Any, account: str) -> int:
    item = dynamodb.get_item(TableName=physical("balances"), Key=balance_key(account)).get("Item")
    return int(item["balance"]["N"]) if item else 0


@pytest.fixture
def funded(dynamodb: Any) -> Any:
    """The opening balances (`proof.seed`) and an ACCEPTED transfer."""
    seed(dynamodb, {"balances": physical("balances")})
    dynamodb.put_item(
        TableName=physical(SERVICE.entity.table),
        Item={**key(ENTITY_ID, SERVICE.entity.name), "status": {"S": Status.ACCEPTED.value}},
    )
    return dynamodb


def _status(dynamodb: Any) -> dict[str, Any]:
    item = dynamodb.get_item(
        TableName=physical(SERVICE.entity.table), Key=key(ENTITY_ID, SERVICE.entity.name)
    )["Item"]
    return {name: value["S"] for name, value in item.items() if name in ("status", "reason")}


def test_the_happy_path_moves_the_amount_once_even_when_every_step_runs_twice(
    funded: Any, ctx: StepContext, fences: FenceStore, queue: SentEvents
) -> None:
    state = _state(amount=1_250)
    for step in SERVICE.happy_path():
        first = _run(ctx, fences, step, state)
        assert _run(ctx, fences, step, state) == first  # a replay: the stored result
        state.setdefault("results", {})[step] = first

    assert (_balance(funded, SOURCE), _balance(funded, TARGET)) == (FUNDED - 1_250, FUNDED + 1_250)
    assert _movements(funded) == [CREDIT, DEBIT]
    assert len(_items(funded, "payouts")) == 1
    assert len(queue.bodies) == 1
    assert (queue.bodies[0]["entity_id"], queue.bodies[0]["amount"]) == (ENTITY_ID, 1_250)
    assert _status(funded) == {"status": Status.COMPLETED}


def test_a_source_without_the_funds_is_refused_and_nothing_moves(
    funded: Any, ctx: StepContext, fences: FenceStore
) -> None:
    state = _state(amount=500, source=EMPTY)
    with pytest.raises(InsufficientFunds):
        _run(ctx, fences, "DebitSource", state)
    with pytest.raises(InsufficientFunds):  # a retry of the step gets the recorded answer
        _run(ctx, fences, "DebitSource", state)
    catch = SERVICE.step("DebitSource").catch
    catcher = next(name for name, errors in catch.items() if "InsufficientFunds" in errors)
    _run(ctx, fences, catcher, {**state, "error": {"Error": "InsufficientFunds"}})

    assert _balance(funded, EMPTY) == 0
    assert _movements(funded) == []
    assert _status(funded) == {"status": Status.FAILED, "reason": "InsufficientFunds"}


def test_an_unknown_source_account_holds_nothing(funded: Any, ctx: StepContext, fences: FenceStore) -> None:
    with pytest.raises(InsufficientFunds):
        _run(ctx, fences, "DebitSource", _state(amount=1, source="acct-nobody"))
    assert _movements(funded) == []
    assert _balance(funded, "acct-nobody") == 0


def test_a_refused_payout_has_its_debit_reversed_and_the_transfer_failed(
    funded: Any, ctx: StepContext, fences: FenceStore
) -> None:
    amount = PAYOUT_LIMIT + 1
    state = _state(amount=amount)
    _run(ctx, fences, "DebitSource", state)
    assert _balance(funded, SOURCE) == FUNDED - amount
    with pytest.raises(PayoutRefused):
        _run(ctx, fences, "Payout", state)
    with pytest.raises(PayoutRefused):  # a retry of the step gets the recorded answer
        _run(ctx, fences, "Payout", state)
    refused = {**state, "error": {"Error": "PayoutRefused"}}
    reversal = next(n for n, errors in SERVICE.step("Payout").catch.items() if "PayoutRefused" in errors)
    for step in (reversal, SERVICE.next_of(SERVICE.step(reversal))):
        assert step is not None
        _run(ctx, fences, step, refused)
        _run(ctx, fences, step, refused)  # a replay moves nothing more

    assert (_balance(funded, SOURCE), _balance(funded, TARGET)) == (FUNDED, FUNDED)
    assert _movements(funded) == [DEBIT, REVERSAL]
    assert _status(funded) == {"status": Status.FAILED, "reason": "PayoutRefused"}
    states = {s: FenceState.COMPLETED for s in ("DebitSource", "ReverseDebit", "MarkFailed")}
    assert SAGA.step_statuses({**states, "Payout": FenceState.FAILED}) == {
        "DebitSource": StepStatus.COMPENSATED,
        "Payout": StepStatus.FAILED,
        "ReverseDebit": StepStatus.DONE,
        "MarkFailed": StepStatus.DONE,
    }


def test_a_takeover_finds_the_payout_an_earlier_attempt_made(ctx: StepContext, dynamodb: Any) -> None:
    # The provider has the run's payout (an attempt that crashed before its fence completed)
    assert ctx.provider is not None
    state = _state(amount=100)
    made = ctx.provider.pay(
        idempotency_key="k-1", entity_id=ENTITY_ID, reference=state["token"], target=TARGET, amount=100
    )
    step = SAGA.steps()["Payout"]

    # When the step reconciles before calling again
    request = StepRequest(state=state, attempt_id="attempt-2", remaining_seconds=20.0)
    found = step.reconcile(ctx, SAGA.read_run(state).terms, request) if step.reconcile else None  # type: ignore[union-attr]

    # Then it finds that payout, and the provider holds one
    assert found == {"payout_id": made.payout_id}
    assert len(_items(dynamodb, "payouts")) == 1


def test_every_declared_step_and_consumer_resolves() -> None:
    assert set(SAGA.steps()) == {step.name for step in SERVICE.steps}
    assert SERVICE.happy_path() == ("DebitSource", "Payout", "CreditTarget", "Publish", "Complete")
