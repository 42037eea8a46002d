"""Random multi-fault schedules (hypothesis, fixed seed): a few in `make test`, hundreds in
`make chaos`. A violating schedule is shrunk by hypothesis and reported."""

from __future__ import annotations

import pytest

from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_random, run_schedule

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


def test_a_random_schedule_keeps_every_invariant(assembly, completed_points):
    results = run_random(assembly, completed_points, examples=1, seed=6, raise_on_violation=True)
    assert len(results) == 1


def test_a_storm_of_faults_on_one_order_keeps_every_invariant(assembly):
    # Given crashes in three functions, 5 deliveries of every message, lease expiries, redrives,
    # a restart with the same token and a DLQ redrive
    schedule = Schedule(
        orders=("completed", "declined"),
        crashes=(
            PointHit.parse("worker:after:SFN.StartExecution#1"),
            PointHit.parse("charge-payment:fence:after-effect:ChargePayment#1"),
            PointHit.parse("notify:after:DynamoDB.UpdateItem#1"),  # its dedup record rides on the item
        ),
        actions=(
            Action("retry", order=0),
            Action("deliver", queue="OrdersQueueUrl", duplicates=4),
            Action("lease-expiry"),
            Action("wait"),
            Action("redrive"),
            Action("deliver", queue="NotifyQueueUrl", duplicates=4),
            Action("deliver", queue="AnalyticsQueueUrl", duplicates=4),
            Action("restart"),
            Action("dlq-redrive"),
            Action("retry", order=1),
        ),
    )
    result = run_schedule(assembly, schedule)
    assert result.violations == []
    assert len(result.fired) == 3
    assert result.recovery.duplicate_deliveries >= 8
