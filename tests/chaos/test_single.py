"""Single faults: one crash at a point, the platform's own recovery (or an operator redrive), then
every invariant holds. The large set (every point of every function) is `make chaos`."""

from __future__ import annotations

import pytest

from chaos.points import PointHit
from chaos.single import run_single

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# One crash per boundary that matters, each healed by a different mechanism.
CASES = [
    # the client retries: the function died after storing the order, before sending its message
    ("completed", "api:after:DynamoDB.PutItem#2"),
    # the client retries: the response was stored, then the function died (a replay answers)
    ("completed", "api:after:DynamoDB.UpdateItem#1"),
    # SQS redelivers after the visibility timeout: died after starting the execution
    ("completed", "worker:after:SFN.StartExecution#1"),
    # Step Functions retries (Runtime.ExitError): the provider charged, the fence never completed
    ("completed", "charge-payment:fence:after-effect:ChargePayment#1"),
    # SQS redelivers a consumer's batch: the transaction committed, the response was lost
    ("completed", "analytics:after:DynamoDB.TransactWriteItems#1"),
    ("completed", "notify:after:DynamoDB.TransactWriteItems#1"),
    # compensation: the decline was recorded, then ChargePayment died
    ("declined", "charge-payment:after:DynamoDB.PutItem#2"),
    ("out-of-stock", "mark-failed:after:DynamoDB.TransactWriteItems#1"),
]


@pytest.mark.parametrize(("kind", "label"), CASES, ids=[f"{k}/{p}" for k, p in CASES])
def test_one_crash_then_recovery_keeps_every_invariant(assembly, kind, label):
    result = run_single(assembly, kind, PointHit.parse(label))
    assert result.fired == [label]
    assert result.violations == []
    assert result.recovery.crashed_invocations == 1
