"""Random multi-fault schedules (`chaos.draw`, fixed seed): a few in `make test`, hundreds in
`make chaos`. A violating schedule is shrunk (`chaos.shrink`) and reported."""

from __future__ import annotations

import pytest

from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_random, run_schedule

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


def test_a_random_schedule_keeps_every_invariant(assembly, completed_catalogue):
    results = run_random(assembly, completed_catalogue, examples=1, seed=6, raise_on_violation=True)
    assert len(results) == 1


def test_a_storm_of_faults_on_one_order_keeps_every_invariant(assembly):
    # Given crashes in three functions, 5 deliveries of every message, lease expiries, redrives,
    # a restart with the same token and a DLQ redrive
    schedule = Schedule(
        outcomes=("completed", "payment-declined"),
        crashes=(
            PointHit.parse("worker:after:SFN.StartExecution#1"),
            PointHit.parse("charge-payment:fence:after-effect:ChargePayment#1"),
            PointHit.parse("notify:after:DynamoDB.UpdateItem#1"),  # its dedup record rides on the item
        ),
        actions=(
            Action("retry", entity=0),
            Action("deliver", queue="OrdersQueueUrl", duplicates=4),
            Action("lease-expiry"),
            Action("wait"),
            Action("redrive"),
            Action("deliver", queue="NotifyQueueUrl", duplicates=4),
            Action("deliver", queue="AnalyticsQueueUrl", duplicates=4),
            Action("restart"),
            Action("dlq-redrive"),
            Action("retry", entity=1),
        ),
    )
    result = run_schedule(assembly, schedule)
    assert result.violations == []
    assert len(result.fired) == 3
    assert result.recovery.duplicate_deliveries >= 8


def test_a_rerun_after_a_declined_run_and_the_first_runs_leftovers_keep_every_invariant(assembly):
    # Given a declined order whose run 1 crashed after its charge, an operator's rerun (run 2),
    # then run 1 coming back: a restart of its execution under the same token, a stray message
    # for a run nobody started, a DLQ redrive and 16 days passing
    schedule = Schedule(
        outcomes=("payment-declined",),
        crashes=(PointHit.parse("charge-payment:fence:after-effect:ChargePayment#1"),),
        actions=(
            Action("rerun"),
            Action("restart"),
            Action("stray-run"),
            Action("rerun"),
            Action("dlq-redrive"),
            Action("time-travel", days=16),
            Action("redrive"),
        ),
    )
    # When it runs to rest
    result = run_schedule(assembly, schedule)
    # Then both runs started, each judged on its own effects, and nothing is violated
    assert result.violations == []
    assert result.recovery.reruns == 2
    assert result.recovery.stray_runs == 1


def test_a_sweep_that_dies_does_not_strand_an_order(assembly):
    # Given the API dies after writing the order, its client gives up, and the sweep times out
    # (found by the random search once the schedule's rest ticked only once)
    schedule = Schedule(
        outcomes=("completed",),
        crashes=(PointHit.parse("api:after:DynamoDB.PutItem#2"),),
        timeouts=(PointHit.parse("sweep-accepted:after:DynamoDB.Scan#1"),),
        gives_up=(0,),
        actions=(Action("wait"),),
    )
    # Then Lambda's retry of the scheduled invocation (or the next tick) re-sends it, and it completes
    result = run_schedule(assembly, schedule)
    assert result.violations == []
    assert len(result.fired) == 2


def test_the_same_seed_plays_the_same_schedules_to_the_same_outcome(assembly, completed_catalogue):
    # Given random schedules from one seed (several orders, restarts, redrives: executions that
    # overlap, which moto would run on threads of their own; the simulator queues them)
    def outcomes() -> list[tuple[object, ...]]:
        results = run_random(assembly, completed_catalogue, examples=6, seed=12)
        return [
            (r.name, r.fired, r.errored, r.lost, sorted(r.violations), r.recovery, r.simulated_seconds)
            for r in results
        ]

    # When they are played twice, Then every crash fired in the same order with the same outcome
    first = outcomes()
    assert first == outcomes()
    entities_per_schedule = [
        str(o[0]).split("outcomes=[", 1)[1].split("]", 1)[0].count(",") + 1 for o in first
    ]
    assert max(entities_per_schedule) >= 2  # executions that overlap: what moto ran on threads


def test_an_operator_who_comes_back_after_the_restart_window_is_refused_and_the_order_left_to_them(
    assembly,
):
    # Given an order whose ChargePayment dies three times, so its execution gives up (FAILED), and
    # 33 days in which the platform rests by itself but nobody redrives
    crashes = (
        PointHit("charge-payment", "after:DynamoDB.PutItem", 1),
        PointHit("charge-payment", "after:DynamoDB.PutItem", 2),
        PointHit("charge-payment", "fence:after-effect:ChargePayment", 1),
    )
    days = tuple(Action("time-travel", days=d) for d in (15, 15, 3))

    # When the operator's redrive finally comes (the end of every schedule)
    result = run_schedule(assembly, Schedule(outcomes=("completed",), crashes=crashes, actions=days))

    # Then ops.redrive refuses it (past the 32 days in which a restart is safe), the order is left
    # to a person, unfinished, and every other invariant holds
    assert result.recovery.refused_redrives >= 1
    assert result.violations == []


def test_an_execution_that_failed_on_an_undeclared_error_is_a_violation_even_once_redriven(assembly):
    # Given the workflow without TransientError in its Retry lists (the transient-retried mutant),
    # and one transient error at ReserveInventory's transaction
    schedule = Schedule(
        outcomes=("completed",),
        crashes=(),
        actions=(Action("wait"),),
        errors=(
            (PointHit.parse("reserve-inventory:before:DynamoDB.TransactWriteItems#1"), "InternalServerError"),
        ),
    )
    # When the execution fails on it and the operator's redrive at the end finishes the order
    result = run_schedule(assembly, schedule, mutant=by_name("transient-retried"))
    # Then the failure an operator had to step in for is still seen
    assert result.recovery.operator_redrives == 1
    assert any("failed on TransientError" in v for v in result.violations), result.violations
    # and main retries it by itself
    assert run_schedule(assembly, schedule).violations == []


@pytest.mark.parametrize(("days", "restarts"), [(2, 1), (33, 0)])
def test_a_same_token_restart_comes_only_while_the_fences_surely_live(assembly, days, restarts):
    # Given a completed order, then `days` later a restart of its workflow under the same token
    schedule = Schedule(
        outcomes=("completed",), crashes=(), actions=(Action("time-travel", days=days), Action("restart"))
    )
    result = run_schedule(assembly, schedule)
    # Then past the restart-safe window (32 days: the fences' windows) no such restart is drawn,
    # as `ops.redrive` refuses one: it is no path by which a token comes back
    assert result.recovery.restarts == restarts
    assert result.violations == []


@pytest.mark.parametrize(
    ("stop", "then"),
    [
        # a declined order whose fences TTL deleted, ChargePayment's FAILED record among them
        ("publish-events:after:SQS.SendMessage#2", ()),
        # an order stopped mid-run, left to an operator, and a stray run-2 message dead-lettered
        ("charge-payment:after:DynamoDB.PutItem#2", (Action("stray-run"),)),
    ],
)
def test_past_the_fence_windows_every_rule_honours_the_same_exemptions(assembly, stop, then):
    # Given a declined order stopped by an operator at `stop`, 35 days passing, then `then`
    # (schedules #76 and #27 of `make chaos`'s seed 20261122, which main reported as violations)
    schedule = Schedule(
        outcomes=("payment-declined",),
        crashes=(),
        stops=(PointHit.parse(stop),),
        actions=(Action("time-travel", days=35, seconds=3456), *then),
    )
    # Then nothing the invariants' own exemptions allow is reported
    assert run_schedule(assembly, schedule).violations == []
