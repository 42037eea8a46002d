"""Single faults: one crash at a point, the platform's own recovery (or an operator redrive), then
every invariant holds. The large set (every point of every function) is `make chaos`."""

from __future__ import annotations

import pytest

from chaos.points import PointHit
from chaos.single import run_single

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# One crash per mechanism that heals it (the other crash points: `make chaos`, and the main-side
# replays of the mutant reproducers in test_mutants.py).
CASES = [
    # the client retries: the function died after storing the order, before sending its message
    ("completed", "api:after:DynamoDB.PutItem#2"),
    # SQS redelivers after the visibility timeout: died after starting the execution
    ("completed", "worker:after:SFN.StartExecution#1"),
    # Step Functions retries (Runtime.ExitError): the provider charged, the fence never completed
    ("completed", "charge-payment:fence:after-effect:ChargePayment#1"),
    # compensation: the decline was recorded, then ChargePayment died
    ("declined", "charge-payment:after:DynamoDB.PutItem#2"),
]


@pytest.mark.parametrize(("kind", "label"), CASES, ids=[f"{k}/{p}" for k, p in CASES])
def test_one_crash_then_recovery_keeps_every_invariant(assembly, kind, label):
    result = run_single(assembly, kind, PointHit.parse(label))
    assert result.fired == [label]
    assert result.violations == []
    assert result.recovery.crashed_invocations == 1
