"""The API's views of the transfer (`workflow.ROUTES` serves them through
`handlers.api`): from a parsed request or a path parameter to the contract's body. The HTTP
idempotency, the error shape and the run model are the library's; a view gets its ports injected.
"""

from __future__ import annotations

from datetime import datetime

from reliability.keys import execution_token
from reliability.record import StepId
from reliability.runs import FenceStore
from reliability.workflow_runs import Queue, RunMessage

from wallet_api import contract, domain
from wallet_api.domain import ENTITY, Status
from wallet_api.errors import TransferConflict, TransferNotFound
from wallet_api.saga import SAGA
from wallet_api.store import Store


def create_transfer(
    body: contract.CreateTransferRequest,
    *,
    stored_key: str,
    owner: str,
    store: Store,
    queue: Queue,
    now: datetime,
) -> contract.TransferAccepted:
    """`POST /transfers`: the transfer is written ACCEPTED on run 1, then its run's
    message is sent. Two writes: a crash between them heals on the client's retry with the same
    key (the id is the key's, so the write finds the stored transfer, and while it is still
    ACCEPTED its message is sent again; the worker dedupes per run), or on the sweep's re-send.
    The key outlives its HTTP record in the transfer it created: another body under it is
    refused then too (422), never answered with the first transfer."""
    asked = domain.Transfer(
        entity_id=ENTITY.id_for(stored_key),
        source=body.source,
        target=body.target,
        amount=body.amount,
        idempotency_key=stored_key,
        created_at=now.isoformat(),
        owner=owner,
    )
    entity = store.create(asked)
    if entity.terms != asked.terms:
        raise TransferConflict(f"transfer {entity.entity_id} holds other terms for this key")
    if entity.status is Status.ACCEPTED:
        queue.send(RunMessage(entity.entity_id, entity.run, entity.idempotency_key).body(ENTITY))
    # The answer to this request, whenever it is asked again: accepted (the GET tells where its run
    # stands), so a retry after the HTTP record expired gets the first answer, not a newer one.
    return contract.TransferAccepted(transfer_id=entity.entity_id, status=Status.ACCEPTED)


def get_transfer(
    transfer_id: str,
    *,
    caller: str,
    store: Store,
    fences: FenceStore,
    stage: str,
) -> contract.TransferView:
    """`GET /transfers/{id}`: the transfer and each step's status on its current run
    (its fences, one batch read). Another caller's transfer does not exist for this one:
    TransferNotFound answers 404, as for an unknown id, so an id cannot be probed."""
    entity = store.get(transfer_id)
    if entity is None or entity.owner != caller:
        raise TransferNotFound(f"no transfer {transfer_id!r}")
    token = execution_token(stage=stage, business_id=entity.entity_id, run=entity.run)
    records = fences.read_many([StepId(token=token, step=step.name) for step in SAGA.service.steps])
    return contract.TransferView(
        transfer_id=entity.entity_id,
        status=entity.status,
        source=entity.source,
        target=entity.target,
        amount=entity.amount,
        # A rerun starts over: only a FAILED run's reason is the transfer's.
        reason=entity.reason if entity.status is Status.FAILED else None,
        steps=SAGA.step_statuses({step.step: record.state for step, record in records.items()}),
    )
