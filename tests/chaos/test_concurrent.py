"""Copies of one run at once, interleaved by a seed (`simulator.concurrent`, `chaos.concurrent`), and
Express's time limit, on both workflow types: the part of the search `make test` runs."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from chaos.draw import Catalogue
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_schedule
from chaos.single import record
from simulator.concurrent import Interleaver, seeded, switch_point

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDERS = "OrdersQueueUrl"


@pytest.fixture(scope="module")
def express(synthesized) -> Path:
    return synthesized("local-express")


def _steps(trace: list[str], seed: int) -> list[str]:
    """Two participants of three switch points each, one of them on a thread it starts (as moto
    runs a task state): the order the seed ran them in."""

    def participant(name: str) -> None:
        def steps() -> None:
            for step in range(3):
                switch_point()
                trace.append(f"{name}{step}")

        child = threading.Thread(target=steps)
        child.start()
        child.join()

    Interleaver(seeded(seed)).run([lambda: participant("a"), lambda: participant("b")])
    return trace


def test_a_seed_interleaves_participants_and_the_threads_they_start_one_way_every_time() -> None:
    orders = {seed: "".join(_steps([], seed)) for seed in range(8)}
    # Then each seed gives one order, again and again, and the seeds give different ones
    assert all("".join(_steps([], seed)) == order for seed, order in orders.items())
    assert len(set(orders.values())) > 1
    assert all(
        sorted(order[i : i + 2] for i in range(0, 12, 2)) == ["a0", "a1", "a2", "b0", "b1", "b2"]
        for order in orders.values()
    )


def test_outside_an_interleaving_a_switch_point_does_nothing() -> None:
    switch_point()


@pytest.mark.parametrize("seed", [1])
def test_two_workers_run_two_express_executions_of_one_run_at_once_and_every_effect_happens_once(
    express: Path, seed: int
) -> None:
    # Given an order whose message two workers handle at once (Express dedupes no names)
    schedule = Schedule(
        outcomes=("completed",), crashes=(), actions=(Action("twin-deliver", queue=ORDERS, seed=seed),)
    )
    # When their executions' steps interleave at every storage call, in the seed's order
    first = run_schedule(express, schedule)
    again = run_schedule(express, schedule)
    # Then every invariant holds, and the same seed plays the same way
    assert first.violations == []
    assert first.recovery.concurrent_copies == 2
    assert (first.fired, first.recovery, sorted(first.points)) == (
        again.fired,
        again.recovery,
        sorted(again.points),
    )


@pytest.mark.parametrize("seed", [2])
def test_the_two_executions_steps_interleave_at_the_storage_calls(express: Path, seed: int) -> None:
    from chaos.cloud import chaos_cloud  # noqa: PLC0415
    from chaos.concurrent import twin_deliver  # noqa: PLC0415
    from chaos.scenarios import place  # noqa: PLC0415

    with chaos_cloud(express) as cloud:
        place(cloud, "completed", f"interleaved-{seed}")
        twin_deliver(cloud, ORDERS, seed=seed)
        steps = [i.function for i in cloud.invocations]
        reserve, mark = cloud.function("ReserveInventory"), cloud.function("MarkCompleted")
    # Then each execution entered the saga before either finished it (not one after the other)
    assert steps.count(reserve) >= 2
    second_reserve = [i for i, f in enumerate(steps) if f == reserve][1]
    assert second_reserve < steps.index(mark)


def test_without_the_guards_two_express_executions_of_one_run_are_caught(express: Path) -> None:
    schedule = Schedule(
        outcomes=("completed",), crashes=(), actions=(Action("twin-deliver", queue=ORDERS, seed=1),)
    )
    assert run_schedule(express, schedule, control=True).violations


@pytest.mark.parametrize("stage", ["local", "local-express"])
def test_a_run_restarted_while_its_first_copy_runs_has_its_effects_once(synthesized, stage: str) -> None:
    # Given two orders whose runs are started again (same token) while the first copies run:
    # on Standard a second execution beside the first, on Express the operator's copy of the message
    schedule = Schedule(
        outcomes=("completed", "payment-declined"),
        crashes=(),
        actions=(Action("concurrent-restart", seed=7),),
    )
    result = run_schedule(synthesized(stage), schedule)
    # Then both copies of each run ran at once, and each effect happened once
    assert result.recovery.concurrent_copies == 4
    assert result.violations == []


def test_an_express_execution_killed_at_its_time_limit_mid_step_is_run_again_under_the_same_token(
    express: Path,
) -> None:
    # Given the execution reaches its 5 minutes while ChargePayment's invocation runs (it runs on)
    limit = PointHit.parse("charge-payment:after:DynamoDB.UpdateItem#1")
    schedule = Schedule(outcomes=("completed",), crashes=(), actions=(), time_limits=(limit,))
    from chaos.cloud import chaos_cloud  # noqa: PLC0415
    from chaos.points import CrashController  # noqa: PLC0415
    from chaos.scenarios import place, verdict  # noqa: PLC0415

    controller = CrashController()
    controller.arm_time_limits(schedule.time_limits)
    with chaos_cloud(express, controller=controller) as cloud:
        placed = place(cloud, "completed", "time-limit")
        cloud.recover()
        judged = verdict(cloud, [placed])
        executions = sorted(cloud.executions(), key=lambda e: e["startDate"])
        tokens = {json.loads(cloud.described(e["executionArn"])["input"])["token"] for e in executions}
        kills = cloud.recovery.time_limit_kills
    # Then it ended TIMED_OUT, the queue ran the run again under the same token, and it completed once
    assert [e["status"] for e in executions] == ["TIMED_OUT", "SUCCEEDED"]
    assert len(tokens) == 1
    assert kills == 1
    assert judged.violations == []
    assert judged.statuses == {placed.entity_id: "COMPLETED"}


def test_express_schedules_are_drawn_with_copies_at_once_and_time_limit_kills(express: Path) -> None:
    catalogue = Catalogue.of(express, {"completed": record(express, "completed")})
    assert catalogue.express
    assert "charge-payment" in catalogue.steps
    from chaos.draw import Drawer  # noqa: PLC0415

    drawer = Drawer(catalogue, seed=11)
    drawn = [drawer.draw() for _ in range(30)]
    kinds = {kind for schedule in drawn for kind in schedule.kinds()}
    assert {"twin-deliver", "concurrent-restart", "time-limit"} <= kinds


def test_an_express_effect_left_at_its_boundary_waits_in_the_dlq_across_the_window(express: Path) -> None:
    # Given the Express schedules drawn as an effect left at a boundary, then a window crossed
    catalogue = Catalogue.of(express, {"completed": record(express, "completed")})
    assert catalogue.queue_receives >= 2
    from chaos.draw import Drawer  # noqa: PLC0415

    drawn = [Drawer(catalogue, seed).draw() for seed in range(60)]
    left = [s for s in drawn if s.stops and s.actions[0].kind == "deliver" and "dlq-redrive" in s.kinds()]
    # Then some deliver the run (the kill fires), throttle its every other receive into the DLQ,
    # and only then let the window pass and the operator redrive the DLQ
    assert left
    kinds = [a.kind for a in left[0].actions]
    window = kinds.index("time-travel")
    assert kinds[:window] == ["deliver", *["throttled-poll"] * catalogue.queue_receives]
    assert kinds[window + 1] == "dlq-redrive"


def _dead_lettered_before_its_execution(jump: int) -> Schedule:
    """A declined order whose Express worker dies right after marking it RUNNING (no execution
    started), whose message SQS then dead-letters (a throttled worker, no reason attached), and
    `jump` seconds pass with nobody redriving (the shrunk schedule #60 of `make chaos
    WORKFLOW=express`, seed 20261122)."""
    return Schedule(
        outcomes=("payment-declined",),
        crashes=(),
        actions=(
            Action("deliver", queue=ORDERS),
            *(Action("throttled-poll", queue=ORDERS) for _ in range(10)),
            Action("time-travel", seconds=jump),
            Action("dlq-redrive"),
        ),
        stops=(PointHit.parse("worker:after:DynamoDB.UpdateItem#1"),),
    )


def test_an_express_order_whose_message_outlived_the_dlq_is_restarted_by_the_operator(express: Path) -> None:
    from reliability.cdk.config import DLQ_RETENTION_DAYS, SECONDS_PER_DAY  # noqa: PLC0415

    # Given the run's only message expired in the DLQ, the order still restartable (inside 32 d)
    result = run_schedule(
        express, _dead_lettered_before_its_execution((DLQ_RETENTION_DAYS + 1) * SECONDS_PER_DAY)
    )
    # Then the operator's restart of the order still RUNNING at rest finished it (FAILED, compensated)
    assert result.violations == []
    assert result.recovery.operator_redrives == 1


def test_an_express_order_whose_message_outlived_the_restart_safe_window_is_left_to_a_person(
    express: Path,
) -> None:
    from ops.redrive import RESTART_SAFE_SECONDS  # noqa: PLC0415

    # Given the same order found only past the restart-safe window, its fences possibly gone
    result = run_schedule(express, _dead_lettered_before_its_execution(RESTART_SAFE_SECONDS + 3600))
    # Then the operator's restart is refused and the order is left to a person, not judged stranded
    assert result.violations == []
    assert result.recovery.refused_redrives == 1
