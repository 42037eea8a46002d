"""The lab's invariant checker (`ops.invariants.check`) over the wallet's tables, run in a copy:
`python -m tests.template.wallet_lab [--unfenced-payout]` with the copy's functions/ and this
checkout on the path (test_wallet.py runs it in a subprocess, so the copy's `wallet_api` never
enters the test process).

Each outcome of the wallet's workflow (`ops.outcomes`: completed, insufficient-funds,
payout-refused) is run once through the saga's fenced steps on moto, from the wallet's own
request for it (`wallet_api.proof.request`), its event given to the audit consumer; then the
checker's report is printed as JSON. `--unfenced-payout`: after the completed transfer's Payout,
the provider's key lifetime passes and the step's effect runs again without its fence, as it would
with `fence-off:Payout`: the checker must see the second payout.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from moto import mock_aws
from wallet_api import store as transfers
from wallet_api.domain import Terms, Transfer, workflow_input
from wallet_api.proof import request, seed
from wallet_api.provider import FakeProvider
from wallet_api.saga import PROVIDER_PORT, SAGA, StepContext
from wallet_api.workflow import SERVICE

from ops.invariants import check
from ops.invariants.stores import Stores
from ops.outcomes import outcomes
from reliability.consumers import effect_of
from reliability.declaration import FENCES
from reliability.errors import BusinessError
from reliability.keys import execution_token
from reliability.record import RECORD_KEY, StepId
from reliability.runs import FenceStore
from reliability.saga import SAGA_NAMESPACE, StepRequest
from reliability.settings import IDEMPOTENCY
from reliability.telemetry import Telemetry

REGION, STAGE = "us-east-1", "lab"
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
KEY_LIFETIME_SECONDS = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


class Queue:
    """A consumer's queue that keeps what it was sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def send(self, body: Any) -> str:
        self.bodies.append(dict(body))
        return f"m-{len(self.bodies)}"


def _tables(dynamodb: Any) -> dict[str, str]:
    names = {table: f"wallet-lab-{table}" for table in (*SERVICE.tables, FENCES, IDEMPOTENCY)}
    for table in SERVICE.tables:
        keys = [("pk", "HASH"), ("sk", "RANGE")]
        _create(dynamodb, names[table], keys)
    for table in (FENCES, IDEMPOTENCY):
        _create(dynamodb, names[table], [(RECORD_KEY, "HASH")])
    return names


def _create(dynamodb: Any, name: str, keys: list[tuple[str, str]]) -> None:
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": attribute, "KeyType": kind} for attribute, kind in keys],
        AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": "S"} for attribute, _ in keys],
        BillingMode="PAY_PER_REQUEST",
    )


def _run(
    outcome: str, ctx: Any, fences: FenceStore, store: Any, clock: Clock, *, unfenced_payout: bool
) -> None:
    """One transfer of `outcome`, step by step as the state machine would (Catch on a refusal)."""
    body = request(outcome)
    entity_id = f"tr-{outcome.replace('-', '')[:8]:0<32}"
    store.create(
        Transfer(
            entity_id=entity_id,
            idempotency_key=f"k-{entity_id}",
            created_at=NOW.isoformat(),
            owner="lab",
            **body,
        )
    )
    store.mark_running(entity_id, run=1, execution_arn=f"arn:{entity_id}")
    token = execution_token(stage=STAGE, business_id=entity_id, run=1)
    state: dict[str, Any] = workflow_input(Terms(entity_id=entity_id, **body), token)
    step: str | None = SERVICE.steps[0].name
    while step is not None:
        attempt = StepRequest(state=state, attempt_id=f"attempt-{step}", remaining_seconds=20.0)
        try:
            state.setdefault("results", {})[step] = SAGA.run_step(ctx, fences, step, attempt)
        except BusinessError as refusal:
            name = type(refusal).__name__
            state["error"] = {"Error": name}
            step = next(target for target, errors in SERVICE.step(step).catch.items() if name in errors)
            continue
        if unfenced_payout and step == "Payout":
            clock.now += KEY_LIFETIME_SECONDS + 1  # the provider forgets the key
            external_key = fences.external_key(StepId(token=token, step=step))
            SAGA.steps()[step].run(ctx, SAGA.read_run(state).terms, attempt, external_key)
        step = SERVICE.next_of(SERVICE.step(step))


def main(argv: list[str]) -> int:
    clock = Clock()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        names = _tables(dynamodb)
        seed(dynamodb, names)
        telemetry = Telemetry(logger=Logger(service="wallet-lab"), metrics=Metrics(service="wallet-lab"))
        fences = FenceStore(
            client=dynamodb,
            table_name=names[FENCES],
            telemetry=telemetry,
            ttl_seconds=10**7,
            namespace=SAGA_NAMESPACE,
            stage=STAGE,
            clock=clock,
        )
        audit = Queue()
        provider = FakeProvider(
            client=dynamodb,
            table=names[PROVIDER_PORT],
            clock=clock,
            key_lifetime_seconds=KEY_LIFETIME_SECONDS,
        )

        def now() -> datetime:
            return datetime.fromtimestamp(clock(), UTC)

        ctx = StepContext(stage=STAGE, clock=now, tables=names, provider=provider, event_queues=[audit])
        store = transfers.store(client=dynamodb, table=names[SERVICE.entity.table])
        for outcome in outcomes(SERVICE):
            _run(outcome.name, ctx, fences, store, clock, unfenced_payout="--unfenced-payout" in argv)

        class Ports:
            def table(self, name: str) -> str:
                return names[name]

        (consumer,) = SERVICE.consumers
        for event in audit.bodies:
            writes = effect_of(SERVICE, consumer.name)(Ports(), event)
            dynamodb.transact_write_items(TransactItems=[write.entry for write in writes])
        sqs = boto3.client("sqs", region_name=REGION)
        report = check(Stores(dynamodb=dynamodb, sqs=sqs, tables=names, clock=clock, declared=SERVICE))
    rows = {
        row.entity_id: {"status": row.status, "outcome": row.outcome, "violations": row.violations}
        for row in report.rows
    }
    print(json.dumps({"rows": rows, "global": report.global_violations}))  # the last line: the report
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
