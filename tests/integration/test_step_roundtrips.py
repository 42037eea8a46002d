"""What a step really costs, end to end through the handlers: the AWS calls of every function of
one order, first run and replay (bench/roundtrips.py counts them; `make bench` prints them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.roundtrips import OrderRun, measure_order

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ATOMIC = ("ReserveInventory", "RecordLedger", "MarkCompleted")
LEASED = ("ChargePayment", "PublishEvents")


@pytest.fixture(scope="module")
def runs(assembly: Path) -> dict[str, OrderRun]:
    return {run.scenario: run for run in measure_order(assembly)}


# Their records are carried by the item their effect writes (orders.items.record_at): no fence call.
CARRIED = {"ReserveInventory": "TransactWriteItems Inventory", "RecordLedger": "UpdateItem Ledger"}


def test_an_atomic_step_is_one_write_first_run_and_replay(runs: dict[str, OrderRun]) -> None:
    for scenario, steps in (
        ("completed", ATOMIC),
        ("payment-declined", ("ReserveInventory", "ReleaseInventory", "MarkFailed")),
    ):
        for step in steps:
            first, replay = runs[scenario].of(step)
            assert len(first.calls) == len(replay.calls) == 1, (step, first, replay)
            if step in CARRIED:
                assert first.calls == [CARRIED[step]], (step, first)
                assert first.layer_calls == [], (step, first)
            else:
                assert first.calls[0].startswith("TransactWriteItems Fence+")
            assert replay.calls == first.calls


def test_a_leased_step_is_claim_effect_complete_and_its_replay_the_refused_claim(
    runs: dict[str, OrderRun],
) -> None:
    for step in LEASED:
        first, replay = runs["completed"].of(step)
        assert first.layer_calls == ["UpdateItem Fence", "UpdateItem Fence"], (step, first)
        assert first.calls[0] == first.calls[-1] == "UpdateItem Fence"  # the effect in between
        assert replay.calls == ["UpdateItem Fence"], (step, replay)
    # The effects themselves: the provider's raw call and charge; one message per consumer queue
    assert runs["completed"].of("ChargePayment")[0].other_calls == ["PutItem Payments", "PutItem Payments"]
    assert runs["completed"].of("PublishEvents")[0].other_calls == [
        "SendMessage NotifyQueue",
        "SendMessage AnalyticsQueue",
    ]
    # A declined charge: claim, the provider's answer, FAILED on the fence; a replay re-raises it
    first, replay = runs["payment-declined"].of("ChargePayment")
    assert (len(first.layer_calls), len(first.other_calls), replay.calls) == (2, 2, ["UpdateItem Fence"])


def test_the_worker_starts_once_and_a_duplicate_costs_one_read(runs: dict[str, OrderRun]) -> None:
    first, replay = runs["completed"].of("Worker")
    assert first.calls == ["GetItem Orders", "StartExecution StateMachine", "UpdateItem Orders"]
    assert replay.calls == ["GetItem Orders"]


# Its dedup record is carried by the one item per event its effect writes (orders.items).
CONSUMER_WRITE = {"Notify": "UpdateItem Notifications", "Analytics": "TransactWriteItems Aggregates"}


def test_a_consumer_reads_the_order_then_writes_once_first_run_and_replay(runs: dict[str, OrderRun]) -> None:
    # The event is verified against its order (orders.consumers: one GetItem), then applied with
    # its dedup record in one write; a replay is the same read and the refused write
    for function, write in CONSUMER_WRITE.items():
        first, replay = runs["completed"].of(function)
        assert first.calls == replay.calls == ["GetItem Orders", write], (function, first, replay)
        assert first.layer_calls == [], (function, first)


def test_the_order_totals_and_its_view(runs: dict[str, OrderRun]) -> None:
    completed, declined = runs["completed"], runs["payment-declined"]
    # api 5 + worker 3 + three atomic steps 1 each + two leased steps 4 each + two consumers 2 each
    assert (completed.total(completed.first), completed.total(completed.replays)) == (23, 11)
    # api 5 + worker 3 + reserve 1 + declined charge 4 + release 1 + mark failed 1
    assert (declined.total(declined.first), declined.total(declined.replays)) == (15, 6)
    # every step's record in one batch, wherever orders.items.record_at puts it
    assert completed.view == ["GetItem Orders", "BatchGetItem Inventory+Fence+Ledger", "Query Payments"]
