"""The search dimensions the outside review found missing ("Whose key is it"): each new action's
world passes on main and catches the old behaviour of its root cause (`proof.behaviours`)."""

from __future__ import annotations

import pytest

from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.schedules import Action, Schedule, run_schedule

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

CASES = {
    "caller-scope: same key, same body": (
        "caller-scope",
        Schedule(orders=("completed",), crashes=(), actions=(Action("another-caller", variant="same-body"),)),
    ),
    "caller-scope: same key, another body": (
        "caller-scope",
        Schedule(
            orders=("completed",), crashes=(), actions=(Action("another-caller", variant="other-body"),)
        ),
    ),
    "caller-scope: a GET of another's order": (
        "caller-scope",
        Schedule(
            orders=("payment-declined",), crashes=(), actions=(Action("another-caller", variant="get"),)
        ),
    ),
    "retry-finds-order: the sku removed": (
        "retry-finds-order",
        Schedule(orders=("completed",), crashes=(), actions=(Action("late-retry", variant="remove-sku"),)),
    ),
    "rerun-own-write": (
        "rerun-own-write",
        Schedule(
            orders=("payment-declined",),
            crashes=(),
            lost=(PointHit.parse("ops.rerun:after:DynamoDB.UpdateItem#1"),),
            actions=(Action("late-copy"),),
        ),
    ),
    "consumer-verifies: another id": (
        "consumer-verifies",
        Schedule(
            orders=("completed",),
            crashes=(),
            actions=(Action("foreign-event", queue="NotifyQueueUrl", variant="other-id"),),
        ),
    ),
    "consumer-verifies: another stage": (
        "consumer-verifies",
        Schedule(
            orders=("completed",),
            crashes=(),
            actions=(Action("foreign-event", queue="AnalyticsQueueUrl", variant="other-stage"),),
        ),
    ),
    "consumer-verifies: no such order": (
        "consumer-verifies",
        Schedule(
            orders=("payment-declined",),
            crashes=(),
            actions=(Action("foreign-event", queue="NotifyQueueUrl", variant="no-order"),),
        ),
    ),
    "late-copy-duplicate": (
        "late-copy-duplicate",
        Schedule(orders=("out-of-stock",), crashes=(), actions=(Action("late-copy"),)),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_new_dimension_passes_on_main_and_catches_its_old_behaviour(assembly, case):
    mutant, schedule = CASES[case]
    assert run_schedule(assembly, schedule).violations == []
    assert run_schedule(assembly, schedule, mutant=by_name(mutant)).violations != []


def test_a_malformed_foreign_event_is_dead_lettered_with_a_reason(assembly):
    schedule = Schedule(
        orders=("completed",),
        crashes=(),
        actions=(Action("foreign-event", queue="AnalyticsQueueUrl", variant="bad-time"),),
    )
    assert run_schedule(assembly, schedule).violations == []


def test_another_caller_refused_for_the_catalog_is_not_told_a_key_is_in_use(assembly):
    # Given order 0's sku removed, then another caller sending order 0's key and body
    schedule = Schedule(
        orders=("completed",),
        crashes=(),
        actions=(Action("remove-sku"), Action("another-caller", variant="same-body")),
    )
    # Then its 422 UnknownSku is about the catalog, not the key (found on main by the first
    # measurement, when any 409/422 to a first use counted as a key in use)
    assert run_schedule(assembly, schedule).violations == []
