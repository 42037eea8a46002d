"""No stranded order (issue 10): an order whose API died before the enqueue, and whose client never
retried, is re-sent by the scheduled sweeper once it is ACCEPTED past the bound, and completes once;
an order younger than the bound is left alone."""

from __future__ import annotations

import pytest

from ops.invariants import check
from reliability.testing.crashpoints import CrashPlan
from simulator.cloud import InProcessCloud, LambdaError, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-10", "currency": "EUR", "items": [{"sku": "sku-9", "quantity": 2}]}
SCHEDULED = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def _accepted_orders(cloud: InProcessCloud) -> set[str]:
    items = cloud.dynamodb.scan(TableName=cloud.outputs["OrdersTableName"])["Items"]
    return {i["order_id"]["S"] for i in items if i["sk"]["S"] == "order" and i["status"]["S"] == "ACCEPTED"}


def _crash_before_the_enqueue(cloud: InProcessCloud, key: str) -> str:
    before = _accepted_orders(cloud)
    with pytest.raises(LambdaError, match=r"Runtime\.ExitError"):
        cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": key})
    (order_id,) = _accepted_orders(cloud) - before
    return order_id


def test_the_sweeper_resends_an_order_stranded_past_the_bound_and_leaves_a_young_one(assembly):
    plan = CrashPlan.parse("before:SQS.SendMessage@api=2", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        sweeper = cloud.functions[cloud.function("SweepAccepted")]
        bound = int(sweeper.environment["STRANDED_AFTER_SECONDS"])
        # Given the api dies just before sending an order's message, and the client never retries
        old = _crash_before_the_enqueue(cloud, "stranded-old")
        cloud.settle()
        assert not cloud.executions()
        # And, most of a bound later, the same happens to a second order
        cloud.advance(bound - 60)
        young = _crash_before_the_enqueue(cloud, "stranded-young")
        # When the clock passes the first order's bound and the sweeper runs
        cloud.advance(61)
        assert cloud.invoke("SweepAccepted", SCHEDULED) == {"resent": [old]}
        cloud.settle()
        # Then the stranded order completes, charged once; the young one is left alone
        row = check(cloud.stores()).row(old)
        assert (row.status, row.effects["ChargePayment"], row.effects["ReserveInventory"]) == (
            "COMPLETED",
            1,
            1,
        )
        assert _accepted_orders(cloud) == {young}
        assert len(cloud.executions()) == 1
        # And a second sweep once the young order is past the bound heals it too; the completed
        # order is not sent again
        cloud.advance(bound)
        assert cloud.invoke("SweepAccepted", SCHEDULED) == {"resent": [young]}
        cloud.settle()
        assert _accepted_orders(cloud) == set()
        assert len(cloud.executions()) == 2
        report = check(cloud.stores())
        assert report.ok, report.to_text()
        assert [report.row(o).effects["ChargePayment"] for o in (old, young)] == [1, 1]


def test_a_sweep_that_dies_is_retried_as_lambda_retries_an_asynchronous_invocation(assembly):
    # Given a stranded order, and a sweeper that dies after its Scan twice
    plan = CrashPlan.parse("before:SQS.SendMessage@api=1,after:DynamoDB.Scan@sweep-accepted=2", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        sweeper = cloud.function("SweepAccepted")
        bound = int(cloud.functions[sweeper].environment["STRANDED_AFTER_SECONDS"])
        order_id = _crash_before_the_enqueue(cloud, "stranded-sweeper-dies")
        # When the clock passes the bound: EventBridge invokes the sweeper asynchronously
        cloud.advance(bound + 300)
        # Then Lambda retries each error (3 attempts of the one tick), and the third re-sends it
        sweeps = [i.error_type for i in cloud.invocations if i.function == sweeper]
        assert sweeps[-3:] == ["Runtime.ExitError", "Runtime.ExitError", None]
        cloud.settle()
        assert check(cloud.stores()).row(order_id).status == "COMPLETED"
