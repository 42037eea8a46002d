"""The transfer: its terms, its status, the keys of the items the steps write, the
run a workflow state carries and the event a completed transfer emits.

Plain Python: nothing here knows Lambda, boto3 or the environment. Every key prefix is the
declaration's (`wallet_api.workflow`), read from it, never spelled twice. Amounts are integers
in the wallet's minor unit (cents).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from reliability.keys import Fact
from reliability.saga import WorkflowRun

from wallet_api.errors import InvalidWorkflowInput
from wallet_api.workflow import SERVICE

ENTITY = SERVICE.entity
# The item of the transfer itself, under its partition (`Entity.partition`).
ENTITY_SK = ENTITY.name
DEBIT = SERVICE.step("DebitSource").writes[0].prefix
CREDIT = SERVICE.step("CreditTarget").writes[0].prefix
REVERSAL = SERVICE.step("ReverseDebit").writes[0].prefix
AUDIT_ENTRY = SERVICE.consumer("audit").writes[0].prefix
EVENT_COMPLETED = "TransferCompleted"
# An account's balance: `account#<id>` / `balance` in the balances table, its amount in `balance`.
ACCOUNT_PARTITION = "account#"
BALANCE_SK = "balance"


class Status(StrEnum):
    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


def key(entity_id: str, sort_key: str) -> dict[str, dict[str, str]]:
    """The low-level client's key of an item of this transfer."""
    return {"pk": {"S": ENTITY.partition(entity_id)}, "sk": {"S": sort_key}}


def balance_key(account: str) -> dict[str, dict[str, str]]:
    """The low-level client's key of an account's balance."""
    return {"pk": {"S": f"{ACCOUNT_PARTITION}{account}"}, "sk": {"S": BALANCE_SK}}


@dataclass(frozen=True)
class Terms:
    """What every step of a run gets: the transfer's id and what the client asked for."""

    entity_id: str
    source: str
    target: str
    amount: int


@dataclass(frozen=True)
class Transfer:
    """The stored transfer: its terms and where its current run stands (what the library's run
    model reads of it, `reliability.workflow_runs.EntityRun`)."""

    entity_id: str
    source: str
    target: str
    amount: int
    idempotency_key: str
    created_at: str
    owner: str  # the caller who sent it (`reliability.http.caller_of`): only it reads it back
    run: int = 1
    status: Status = Status.ACCEPTED
    execution_arn: str | None = None
    reason: str | None = None  # why a FAILED run failed (the refusal's error name)

    @property
    def terms(self) -> Terms:
        return Terms(entity_id=self.entity_id, source=self.source, target=self.target, amount=self.amount)


def workflow_input(terms: Terms, token: str) -> dict[str, Any]:
    """The state machine's input for one run of `terms` under execution token `token`."""
    return {"token": token, "terms": asdict(terms)}


def run_of(state: Mapping[str, Any]) -> WorkflowRun[Terms]:
    """The run a workflow state carries; InvalidWorkflowInput when it is not one."""
    try:
        terms = Terms(**state["terms"])
        token = str(state["token"])
    except (KeyError, TypeError) as error:
        raise InvalidWorkflowInput(f"step input is not a workflow input: {error!r}") from error
    return WorkflowRun(entity_id=terms.entity_id, token=token, terms=terms)


def completed_fact(entity_id: str, run: int) -> Fact:
    """What a completed run states: the consumers dedupe on it, whatever id a delivery carries."""
    return Fact(kind=EVENT_COMPLETED, subject=entity_id, run=run)


@dataclass(frozen=True)
class CompletedEvent:
    """TransferCompleted, as every consumer's queue receives it."""

    event_id: str
    stage: str | None
    entity_id: str
    run: int
    source: str
    target: str
    amount: int
    occurred_at: str
    type: str = EVENT_COMPLETED

    def fact(self) -> Fact:
        return completed_fact(self.entity_id, self.run)

    def model_dump(self, *, mode: str = "json") -> dict[str, Any]:  # noqa: ARG002 - the consumer's protocol
        return asdict(self)

    @classmethod
    def model_validate(cls, body: Any, /) -> CompletedEvent:
        """`parse` as the consumer's handler parses a body (`reliability.batch.BodyModel`)."""
        if not isinstance(body, Mapping):
            # ValueError: what a body model raises for a wrong shape (`reliability.batch.parse_body`)
            raise ValueError(f"not a {EVENT_COMPLETED} event: not a JSON object")  # noqa: TRY004
        return cls.parse(body)

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> CompletedEvent:
        """The event in a queue message's body; ValueError names what is wrong."""
        if body.get("type") != EVENT_COMPLETED:
            raise ValueError(f"not a {EVENT_COMPLETED} event: type {body.get('type')!r}")
        try:
            event = cls(**dict(body))
        except TypeError as error:
            raise ValueError(f"not a {EVENT_COMPLETED} event: {error}") from error
        if not isinstance(event.amount, int) or not isinstance(event.run, int) or event.run < 1:
            raise ValueError(f"not a {EVENT_COMPLETED} event: run and amount must be integers")
        if not isinstance(event.source, str) or not isinstance(event.target, str):
            raise ValueError(f"not a {EVENT_COMPLETED} event: source and target must be account ids")  # noqa: TRY004
        return event
