"""What each step and the consumer of `wallet_api.workflow` do: plain functions over the ports.

A step's effect knows nothing of fences, Lambda or the state machine (`saga.SAGA.run_step` fences
it): an atomic step returns the writes to commit with its fence record, a leased step calls the
outside world under the idempotency key every attempt of the run shares. A consumer's effect
returns the writes to commit with its dedup record (`reliability.consumers.EventConsumer`).

Money moves only inside a step's transaction, beside the item that says so (`debit#`, `credit#`,
`reversal#<token>`, written once per run): a balance changes exactly when its step is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reliability.effects import AtomicEffect, Write
from reliability.keys import key_parts
from reliability.saga import StepRequest

from wallet_api.domain import (
    AUDIT_ENTRY,
    CREDIT,
    DEBIT,
    ENTITY,
    ENTITY_SK,
    REVERSAL,
    CompletedEvent,
    Status,
    Terms,
    balance_key,
    completed_fact,
    key,
)
from wallet_api.errors import InsufficientFunds, PayoutRefused
from wallet_api.provider import Payout
from wallet_api.saga import StepContext

BALANCES = "balances"


def _token(request: StepRequest) -> str:
    return str(request.state["token"])


def _put_once(table: str, item: Mapping[str, Any]) -> Write:
    """A Put of an item keyed by the run: written once, whatever retries."""
    return Write(
        {"Put": {"TableName": table, "Item": dict(item), "ConditionExpression": "attribute_not_exists(pk)"}}
    )


def _movement(ctx: StepContext, terms: Terms, prefix: str, request: StepRequest, account: str) -> Write:
    """The item that records one movement of the run's amount on `account`."""
    item = {
        **key(terms.entity_id, f"{prefix}{_token(request)}"),
        "account": {"S": account},
        "amount": {"N": str(terms.amount)},
    }
    return _put_once(ctx.table(BALANCES), item)


def _add(ctx: StepContext, account: str, delta: int) -> dict[str, Any]:
    """`delta` added to `account`'s balance (an account appears on its first credit)."""
    return {
        "Update": {
            "TableName": ctx.table(BALANCES),
            "Key": balance_key(account),
            "UpdateExpression": "ADD #balance :delta",
            "ExpressionAttributeNames": {"#balance": "balance"},
            "ExpressionAttributeValues": {":delta": {"N": str(delta)}},
        }
    }


def _status_write(ctx: StepContext, terms: Terms, status: Status, reason: str | None = None) -> Write:
    names = {"#status": "status"}
    values = {":status": {"S": status.value}}
    expression = "SET #status = :status"
    if reason is not None:
        names["#reason"] = "reason"
        values[":reason"] = {"S": reason}
        expression += ", #reason = :reason"
    return Write(
        {
            "Update": {
                "TableName": ctx.table(ENTITY.table),
                "Key": key(terms.entity_id, ENTITY_SK),
                "UpdateExpression": expression,
                "ConditionExpression": "attribute_exists(pk)",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }
    )


# --- steps ------------------------------------------------------------------------------------


def debit_source(ctx: StepContext, terms: Terms, request: StepRequest) -> AtomicEffect:
    """The source's balance down by the amount, only if it holds it (else InsufficientFunds, and
    nothing is written: the refusal is the condition of the very write that would debit)."""
    update = _add(ctx, terms.source, -terms.amount)
    update["Update"]["ConditionExpression"] = "attribute_exists(pk) AND #balance >= :amount"
    update["Update"]["ExpressionAttributeValues"][":amount"] = {"N": str(terms.amount)}
    debit = Write(
        update,
        on_condition_failed=InsufficientFunds(f"account {terms.source} holds less than {terms.amount}"),
    )
    return AtomicEffect(
        result={"debited": terms.amount, "account": terms.source},
        writes=[debit, _movement(ctx, terms, DEBIT, request, terms.source)],
    )


def _paid(payout: Payout) -> dict[str, Any]:
    if not payout.paid:
        raise PayoutRefused(
            f"the provider refused payout {payout.payout_id}", details={"payout_id": payout.payout_id}
        )
    return {"payout_id": payout.payout_id}


def payout(ctx: StepContext, terms: Terms, request: StepRequest, external_key: str) -> dict[str, Any]:
    paid = ctx.need_provider().pay(
        idempotency_key=external_key,
        entity_id=terms.entity_id,
        reference=_token(request),
        target=terms.target,
        amount=terms.amount,
    )
    return _paid(paid)


def find_payout(ctx: StepContext, terms: Terms, request: StepRequest) -> dict[str, Any] | None:
    """The run's payout if an earlier attempt made it (by the run's token, which the provider
    never forgets, unlike the idempotency key); a found refusal is the same refusal."""
    found = ctx.need_provider().find(entity_id=terms.entity_id, reference=_token(request))
    return None if found is None else _paid(found)


def credit_target(ctx: StepContext, terms: Terms, request: StepRequest) -> AtomicEffect:
    return AtomicEffect(
        result={"credited": terms.amount, "account": terms.target},
        writes=[
            Write(_add(ctx, terms.target, terms.amount)),
            _movement(ctx, terms, CREDIT, request, terms.target),
        ],
    )


def publish(ctx: StepContext, terms: Terms, request: StepRequest, _external_key: str) -> dict[str, Any]:
    """TransferCompleted to every consumer's queue (`workflow.CONSUMERS`)."""
    if not ctx.event_queues:
        raise RuntimeError("this function is not configured with the consumers' queues")
    parts = key_parts(_token(request))
    run = parts.run if parts else 1
    event = CompletedEvent(
        event_id=completed_fact(terms.entity_id, run).id(stage=ctx.stage),
        stage=ctx.stage,
        entity_id=terms.entity_id,
        run=run,
        source=terms.source,
        target=terms.target,
        amount=terms.amount,
        occurred_at=ctx.clock().isoformat(),
    )
    messages = [queue.send(event.model_dump()) for queue in ctx.event_queues]
    return {"event_id": event.event_id, "messages": len(messages)}


def complete(ctx: StepContext, terms: Terms, _request: StepRequest) -> AtomicEffect:
    return AtomicEffect(
        result={"status": Status.COMPLETED.value}, writes=[_status_write(ctx, terms, Status.COMPLETED)]
    )


def reverse_debit(ctx: StepContext, terms: Terms, request: StepRequest) -> AtomicEffect:
    """Undo DebitSource: the amount back to the source, beside a reversal item; only what this
    run debited (its debit item must exist)."""
    debited = Write(
        {
            "ConditionCheck": {
                "TableName": ctx.table(BALANCES),
                "Key": key(terms.entity_id, f"{DEBIT}{_token(request)}"),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
    )
    return AtomicEffect(
        result={"reversed": terms.amount, "account": terms.source},
        writes=[
            debited,
            Write(_add(ctx, terms.source, terms.amount)),
            _movement(ctx, terms, REVERSAL, request, terms.source),
        ],
    )


def mark_failed(ctx: StepContext, terms: Terms, request: StepRequest) -> AtomicEffect:
    """The transfer FAILED, with the refusal that led here (the caught error's name)."""
    error = request.state.get("error")
    reason = str(error["Error"]) if isinstance(error, Mapping) and error.get("Error") else None
    result: dict[str, Any] = {"status": Status.FAILED.value}
    if reason is not None:
        result["reason"] = reason
    return AtomicEffect(result=result, writes=[_status_write(ctx, terms, Status.FAILED, reason)])


# --- consumer ---------------------------------------------------------------------------------


class ConsumerPorts(Protocol):
    def table(self, name: str) -> str: ...


def audit(ports: ConsumerPorts, event: Mapping[str, Any]) -> list[Write]:
    """One audit entry per completed transfer (per event id: the dedup record commits with it)."""
    item = {
        **key(str(event["entity_id"]), f"{AUDIT_ENTRY}{event['event_id']}"),
        "source": {"S": str(event["source"])},
        "target": {"S": str(event["target"])},
        "amount": {"N": str(event["amount"])},
        "occurred_at": {"S": str(event["occurred_at"])},
    }
    return [_put_once(ports.table("audit"), item)]
