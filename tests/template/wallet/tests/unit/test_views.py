"""The API's views over the transfers table on moto: what is accepted can be read back, and
its run's message is sent while it is ACCEPTED."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from reliability.runs import FenceStore

from wallet_api import contract
from wallet_api import store as entities
from wallet_api.domain import ENTITY, Status
from wallet_api.errors import InvalidRequest, TransferConflict, TransferNotFound
from wallet_api.views import create_transfer, get_transfer

from support import NOW, STAGE, SentEvents, physical

KEY = "stored-key-1"
OWNER = "sub:caller-1"


@pytest.fixture
def store(dynamodb: Any) -> entities.Store:
    return entities.store(client=dynamodb, table=physical(ENTITY.table))


def _create(store: entities.Store, queue: SentEvents) -> contract.TransferAccepted:
    body = contract.CreateTransferRequest(source="acct-1", target="acct-2", amount=300)
    return create_transfer(body, stored_key=KEY, owner=OWNER, store=store, queue=queue, now=NOW)


def test_an_accepted_transfer_reads_back_as_sent(
    store: entities.Store,
    fences: FenceStore,
    queue: SentEvents,
) -> None:
    accepted = _create(store, queue)
    again = _create(store, queue)  # a client's retry after a crash before its answer
    entity_id = accepted.transfer_id
    view = get_transfer(entity_id, caller=OWNER, store=store, fences=fences, stage=STAGE)

    assert accepted == again
    assert entity_id == ENTITY.id_for(KEY)
    assert entity_id.startswith(ENTITY.id_prefix)
    assert (view.source, view.target, view.amount) == ("acct-1", "acct-2", 300)
    assert (view.status, view.reason, view.steps) == (Status.ACCEPTED, None, {})
    # Its run's message, again on the retry (the worker dedupes per run).
    message = {ENTITY.id_field: entity_id, "run": 1, "idempotency_key": KEY}
    assert queue.bodies == [message, message]


def test_a_transfer_past_accepted_is_not_sent_again(
    store: entities.Store,
    queue: SentEvents,
) -> None:
    accepted = _create(store, queue)
    store.mark_running(accepted.transfer_id, run=1, execution_arn="arn:execution")

    again = _create(store, queue)  # a retry after its HTTP record expired

    assert again == accepted  # the first answer (ACCEPTED), not where its run stands now
    assert len(queue.bodies) == 1


def test_an_unknown_transfer_is_not_found(
    store: entities.Store,
    fences: FenceStore,
) -> None:
    with pytest.raises(TransferNotFound):
        get_transfer(ENTITY.id_for("never"), caller=OWNER, store=store, fences=fences, stage=STAGE)


def test_another_callers_transfer_is_not_found(
    store: entities.Store,
    fences: FenceStore,
    queue: SentEvents,
) -> None:
    # Nobody reads another caller's data: its id answers as an unknown one would.
    entity_id = _create(store, queue).transfer_id
    with pytest.raises(TransferNotFound):
        get_transfer(entity_id, caller="sub:someone-else", store=store, fences=fences, stage=STAGE)


@pytest.mark.parametrize(
    "body",
    [
        {"source": "", "target": "acct-2", "amount": 1},
        {"source": "acct-1", "target": "acct-2", "amount": 0},
        {"source": "acct-1", "target": "acct-2", "amount": "1"},
        {"source": "acct-1", "target": "acct-2", "amount": contract.MAX_AMOUNT + 1},
        {"source": "acct 1", "target": "acct-2", "amount": 1},
        {"source": "acct-1", "target": "acct-1", "amount": 1},
        {"source": "acct-1", "amount": 1},
    ],
)
def test_a_request_outside_the_contract_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        contract.CreateTransferRequest.model_validate(body)


def test_a_transfer_to_its_own_source_is_a_422_naming_why() -> None:
    with pytest.raises(InvalidRequest, match="two accounts"):
        contract.parse_create_transfer('{"source": "acct-1", "target": "acct-1", "amount": 5}')


def test_a_key_reused_with_another_body_is_refused_after_its_http_record_expired(
    store: entities.Store,
    queue: SentEvents,
) -> None:
    # Given a transfer created under KEY (its HTTP record since expired: the view runs again)
    _create(store, queue)
    other = contract.CreateTransferRequest(source="acct-1", target="acct-2", amount=301)
    # Then another body under the same key is 422 IdempotencyKeyReused, not the first's 202
    with pytest.raises(TransferConflict) as refused:
        create_transfer(other, stored_key=KEY, owner=OWNER, store=store, queue=queue, now=NOW)
    assert (refused.value.status, refused.value.code) == (422, "IdempotencyKeyReused")
    assert len(queue.bodies) == 1
