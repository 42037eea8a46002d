"""The scale model: its SQS, token-bucket and retry semantics, and what the capacity plan buys.

The burst tests run the real `make scale` burst (10,000 orders in a simulated minute) on the prod
templates, planned and mutant: a few seconds of CPU each.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from emulator.synth import synthesize
from reliability.cdk.capacity import THROTTLE_STORM_SECONDS, UNPLANNED_MAX_RECEIVE_COUNT
from scale import scenarios
from scale.model import Faults, Model, Order, new_orders
from scale.services import Message, Queue, Sim, TokenBucket
from scale.topology import QueueSpec, Topology, read, without_capacity


@pytest.fixture(scope="module")
def prod() -> Topology:
    return read(synthesize("prod"), "prod")


def _lost(report: dict[str, Any]) -> int:
    return int(report["violations"] + report["not_terminal"] + sum(report["dlq_legit"].values()))


def test_the_burst_on_the_planned_templates_loses_nothing(prod: Topology) -> None:
    report = scenarios.run(prod, scenarios.BURST)
    assert report["orders"] == 10_000
    assert report["completed"] + report["failed_compensated"] == 10_000
    assert _lost(report) == 0
    assert report["failed_executions"] == 0


def test_the_same_burst_without_the_capacity_plan_loses_orders(prod: Topology) -> None:
    # Given the mutant: no ESM maximum, no reserved concurrency, no throttle backoff, 5 receives
    report = scenarios.run(without_capacity(prod), scenarios.BURST)
    # Then executions exhaust their retries against the provider and StartExecution throttles,
    # leaving orders that only an operator's redrive would finish
    assert _lost(report) > 0
    assert report["throttles"]["payments provider"] > 0
    assert report["throttles"]["Step Functions StartExecution"] > 0


@pytest.mark.parametrize(("mutant", "lost"), [(False, False), (True, True)])
def test_the_worker_backoff_rides_out_the_planned_throttle_storm(
    prod: Topology, mutant: bool, lost: bool
) -> None:
    # Given StartExecution drained for the whole storm the plan sizes maxReceiveCount for
    topology = without_capacity(prod) if mutant else prod
    model = Model(topology, Faults(start_storm=(0.0, float(THROTTLE_STORM_SECONDS))), seed=3)
    for n in range(200):
        model.submit(n * 0.01, Order(f"o-{n}"))
    model.run(horizon=4 * 3600)
    report = model.report()
    # Then with the plan's backoff every message outlives it; with 5 receives of 180 s none does
    assert (sum(report["dlq_legit"].values()) > 0) is lost
    assert (report["completed"] == 200) is not lost


def _queue(max_receive_count: int = 2, visibility: int = 30) -> tuple[Sim, Queue]:
    sim = Sim()
    spec = QueueSpec("orders", "worker", visibility, max_receive_count, 10, 0, None)
    return sim, Queue(sim, spec)


def test_a_message_moves_to_the_dlq_on_the_receive_after_max_receive_count() -> None:
    sim, queue = _queue(max_receive_count=2, visibility=30)
    queue.send(Message("o-1", 0.0))
    assert [m.ref for m in queue.receive(10)] == ["o-1"]  # receive 1
    assert queue.receive(10) == []  # invisible for the visibility timeout
    sim.now = 30.0
    assert len(queue.receive(10)) == 1  # receive 2
    sim.now = 60.0
    assert queue.receive(10) == []  # the third receive moves it instead
    assert [m.ref for m in queue.dlq] == ["o-1"]
    assert queue.live == 0


def test_change_visibility_and_delete() -> None:
    sim, queue = _queue(visibility=30)
    queue.send(Message("o-1", 0.0))
    (message,) = queue.receive(10)
    queue.change_visibility(message, 5)
    sim.now = 5.0
    assert queue.receive(10) == [message]
    queue.delete(message)
    sim.now = 100.0
    assert queue.receive(10) == []
    assert queue.live == 0


def test_token_bucket_refills_at_its_rate_and_stays_empty_while_blocked() -> None:
    bucket = TokenBucket(size=2, rate=1)
    assert bucket.take(0.0)
    assert bucket.take(0.0)
    assert not bucket.take(0.0)
    assert bucket.wait(0.0) == pytest.approx(1.0)
    assert bucket.take(1.0)
    assert not bucket.take(1.5)
    bucket.blocked = (2.0, 10.0)
    assert not bucket.take(9.9)
    assert bucket.wait(9.0) == pytest.approx(1.0)
    assert bucket.take(11.0)


def test_the_mutant_strips_exactly_the_capacity_settings(prod: Topology) -> None:
    mutant = without_capacity(prod)
    assert all(q.max_concurrency is None for q in mutant.queues.values())
    assert all(q.max_receive_count == UNPLANNED_MAX_RECEIVE_COUNT for q in mutant.queues.values())
    assert all(f.reserved is None and not f.backoff_schedule for f in mutant.functions.values())
    assert mutant.workflow == prod.workflow
    # and the planned topology carries them, read from the templates
    assert prod.queues["orders"].max_concurrency
    assert prod.functions["charge-payment"].reserved
    assert prod.functions["worker"].backoff_schedule


def test_orders_are_drawn_into_the_workflows_catch_outcomes_by_the_proofs_shares() -> None:
    # Given the sample's shares (declined 5 %, out of stock 2 %), one roll per order
    orders = new_orders(10_000, rng=random.Random(3), shares=scenarios.OUTCOME_SHARES)
    drawn = Counter(o.outcome for o in orders)
    # Then each catch outcome of the declaration gets about its share, the rest the happy path
    assert set(drawn) == {None, "payment-declined", "out-of-stock"}
    assert 400 < drawn["payment-declined"] < 600
    assert 120 < drawn["out-of-stock"] < 280
