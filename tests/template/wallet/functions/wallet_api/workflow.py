"""wallet-api's declaration: a transfer of money between two wallet accounts. Its entity, tables,
the saga's fenced steps, the API's routes, the audit consumer, and each entry's declared effect,
gathered in `SERVICE`.

The saga: DebitSource (atomic: the source's balance down, only if it holds the amount), Payout
(leased: the payout provider, reconciled by the run's reference), CreditTarget (atomic: the
target's balance up), Publish (TransferCompleted to the consumers' queues), Complete.
Two refusals end a transfer FAILED:
- the source lacks the funds: DebitSource's conditional debit refuses (InsufficientFunds) and
  nothing was moved, so the catch goes straight to MarkFailed. The funds are checked there, in
  the debit's own condition, not at the API: a check at the API would race the debits of
  concurrent transfers, and the debit must hold its condition anyway;
- the provider refuses the payout (PayoutRefused): ReverseDebit gives the source its amount back
  (the compensation of DebitSource), then MarkFailed.
MarkFailed alone sets FAILED (the run model's one failed status, set by one step), so a transfer
is FAILED exactly when MarkFailed is done, whichever refusal led there.

The types are the reliability library's (`reliability.declaration`); each effect is named by its
dotted path, so the CDK app loads this file as data without importing runtime code. Standard
library and `reliability.declaration` only (tests/unit/test_workflow.py).
"""

from __future__ import annotations

from reliability.declaration import EVENTS, Consumer, Entity, Item, Route, Service, Step

# The tables a step or consumer may name (every fenced step also gets the fence table).
# `balances`: each account's balance (`account#<id>` / `balance`) and, under a transfer's
# partition, the debit, credit and reversal items the steps write once per run.
# `payouts` is the fake payout provider's own table: a real provider keeps its records itself.
TABLES = frozenset({"transfers", "balances", "payouts", "audit"})

STEPS: tuple[Step, ...] = (
    Step(
        name="DebitSource",
        kind="atomic",
        effect="wallet_api.effects:debit_source",
        description="Workflow step: debit the source account, if it holds the amount (fenced)",
        ports=("balances",),
        catch={"MarkFailed": ("InsufficientFunds",)},
        writes=(Item("balances", "debit#"),),
    ),
    Step(
        name="Payout",
        kind="leased",
        effect="wallet_api.effects:payout",
        reconcile="wallet_api.effects:find_payout",
        description="Workflow step: pay the transfer out through the provider (fenced, reconciled)",
        ports=("payouts",),
        catch={"ReverseDebit": ("PayoutRefused",)},
        provider="payouts",
    ),
    Step(
        name="CreditTarget",
        kind="atomic",
        effect="wallet_api.effects:credit_target",
        description="Workflow step: credit the target account (fenced)",
        ports=("balances",),
        writes=(Item("balances", "credit#"),),
    ),
    # SQS has no lookup; a republish is harmless while the consumers still remember the event id.
    Step(
        name="Publish",
        kind="leased",
        effect="wallet_api.effects:publish",
        description="Workflow step: send TransferCompleted to the consumers' queues (fenced)",
        ports=(EVENTS,),
        provider=EVENTS,
    ),
    Step(
        name="Complete",
        kind="atomic",
        effect="wallet_api.effects:complete",
        description="Workflow step: mark the transfer COMPLETED (fenced)",
        ports=("transfers",),
        next=None,
        status="COMPLETED",
    ),
    Step(
        name="ReverseDebit",
        kind="atomic",
        effect="wallet_api.effects:reverse_debit",
        description="Compensation: give the source account back what DebitSource took (fenced)",
        ports=("balances",),
        next="MarkFailed",
        compensates="DebitSource",
        writes=(Item("balances", "reversal#"),),
    ),
    Step(
        name="MarkFailed",
        kind="atomic",
        effect="wallet_api.effects:mark_failed",
        description="Workflow step: mark the transfer FAILED with the refusal's reason (fenced)",
        ports=("transfers",),
        next=None,
        status="FAILED",
    ),
)

ROUTES: tuple[Route, ...] = (
    Route(
        method="POST",
        path="/transfers",
        operation_id="createTransfer",
        view="wallet_api.handlers.api:create_transfer",
        status=202,
        description="accepted (or the stored answer replayed)",
        response="TransferAccepted",
        request="CreateTransferRequest",
        idempotent=True,
        errors={
            400: ("IdempotencyKeyMissing", "IdempotencyKeyInvalid", "MalformedBody"),
            409: ("RequestInProgress",),
            415: ("UnsupportedMediaType",),
            # InvalidRequest: outside the contract (a transfer to its own source account too).
            422: ("InvalidRequest", "IdempotencyKeyReused"),
        },
    ),
    Route(
        method="GET",
        path="/transfers/{transfer_id}",
        operation_id="getTransfer",
        view="wallet_api.handlers.api:get_transfer",
        status=200,
        description="the transfer",
        response="TransferView",
        errors={404: ("TransferNotFound",)},
    ),
)

CONSUMERS: tuple[Consumer, ...] = (
    Consumer(
        name="audit",
        effect="wallet_api.effects:audit",
        description="Audit queue consumer: one audit entry per completed transfer (per event id)",
        tables=("audit",),
        writes=(Item("audit", "entry#"),),
    ),
)

SERVICE = Service(
    name="wallet-api",
    entity=Entity(name="transfer", id_prefix="tr-", table="transfers"),
    tables=TABLES,
    queue="transfers",
    steps=STEPS,
    routes=ROUTES,
    consumers=CONSUMERS,
    # Its hooks for the lab: the accounts' opening balances it seeds, its requests per outcome,
    # its own invariants; and its composition root, which the lab's in-process clouds build.
    proof="wallet_api.proof",
    runtime="wallet_api.runtime",
)
