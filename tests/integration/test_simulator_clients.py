"""Clients as simulator primitives: one that gives up while the API keeps dying, and one that comes
back after its idempotency key's TTL (the HTTP record deleted by TTL)."""

from __future__ import annotations

import pytest

from ops.invariants import check
from reliability.testing.crashpoints import CrashPlan
from simulator.clients import DIED, RetryingClient
from simulator.cloud import running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-11", "currency": "EUR", "items": [{"sku": "sku-2", "quantity": 1}]}


def test_a_client_that_gives_up_strands_its_order_until_it_comes_back_after_the_ttl(assembly) -> None:
    # Given an api that dies just before sending the order's message, twice
    plan = CrashPlan.parse("before:SQS.SendMessage@api=2", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        client = RetryingClient(cloud, "gives-up-1", ORDER, max_attempts=2)

        # When the client gives up after two attempts
        assert client.post() is None
        assert client.gave_up
        assert [a.status for a in client.attempts] == [DIED, DIED]
        cloud.settle()
        (row,) = check(cloud.stores()).rows
        assert row.status == "ACCEPTED"  # stored, never enqueued: stranded
        assert not cloud.executions()

        # And comes back once the key's TTL has passed (its HTTP record deleted by TTL)
        before = cloud.expired_items
        response = client.retry_after_key_ttl()
        assert cloud.expired_items > before

        # Then it finds the same order, whose message is sent again, and it completes once
        assert response is not None
        assert (response.status, response.body["order_id"]) == (202, row.entity_id)
        assert not client.gave_up
        cloud.settle()
        report = check(cloud.stores())
        assert (report.row(row.entity_id).status, report.row(row.entity_id).effects["ChargePayment"]) == (
            "COMPLETED",
            1,
        )
        assert not report.violations


def test_a_retry_after_the_ttl_of_a_completed_order_finds_it_and_changes_nothing(assembly) -> None:
    with running_cloud(assembly) as cloud:
        client = RetryingClient(cloud, "after-ttl-1", ORDER)
        first = client.post()
        assert first is not None
        assert first.status == 202
        cloud.settle()

        again = client.retry_after_key_ttl()

        assert again is not None
        assert (again.status, again.body["order_id"]) == (202, first.body["order_id"])
        assert not client.attempts[-1].replayed  # the record had expired: executed again
        cloud.settle()
        assert len(cloud.executions()) == 1
        assert check(cloud.stores()).row(first.body["order_id"]).effects["ChargePayment"] == 1
