"""The search dimensions the outside review found missing ("Whose key is it"): each new action's
world passes on main and catches the old behaviour of its root cause (`proof.behaviours`)."""

from __future__ import annotations

import json

import pytest

from chaos.cloud import chaos_cloud
from chaos.foreign import foreign_event, unknown_id
from chaos.mutants import by_name
from chaos.points import PointHit
from chaos.scenarios import place
from chaos.schedules import Action, Schedule, run_schedule

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

CASES = {
    "caller-scope: same key, same body": (
        "caller-scope",
        Schedule(
            outcomes=("completed",), crashes=(), actions=(Action("another-caller", variant="same-body"),)
        ),
    ),
    "caller-scope: same key, another body": (
        "caller-scope",
        Schedule(
            outcomes=("completed",), crashes=(), actions=(Action("another-caller", variant="other-body"),)
        ),
    ),
    "caller-scope: a GET of another's order": (
        "caller-scope",
        Schedule(
            outcomes=("payment-declined",), crashes=(), actions=(Action("another-caller", variant="get"),)
        ),
    ),
    "retry-finds-order: the sku removed": (
        "retry-finds-order",
        Schedule(outcomes=("completed",), crashes=(), actions=(Action("late-retry", variant="remove-sku"),)),
    ),
    "rerun-own-write": (
        "rerun-own-write",
        Schedule(
            outcomes=("payment-declined",),
            crashes=(),
            lost=(PointHit.parse("ops.rerun:after:DynamoDB.UpdateItem#1"),),
            actions=(Action("late-copy"),),
        ),
    ),
    "consumer-verifies: another id": (
        "consumer-verifies",
        Schedule(
            outcomes=("completed",),
            crashes=(),
            actions=(Action("foreign-event", queue="NotifyQueueUrl", variant="other-id"),),
        ),
    ),
    "consumer-verifies: another stage": (
        "consumer-verifies",
        Schedule(
            outcomes=("completed",),
            crashes=(),
            actions=(Action("foreign-event", queue="AnalyticsQueueUrl", variant="other-stage"),),
        ),
    ),
    "consumer-verifies: no such order": (
        "consumer-verifies",
        Schedule(
            outcomes=("completed", "payment-declined"),
            crashes=(),
            actions=(Action("foreign-event", queue="NotifyQueueUrl", variant="no-entity", entity=1),),
        ),
    ),
    "late-copy-duplicate": (
        "late-copy-duplicate",
        Schedule(outcomes=("out-of-stock",), crashes=(), actions=(Action("late-copy"),)),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_new_dimension_passes_on_main_and_catches_its_old_behaviour(assembly, case):
    mutant, schedule = CASES[case]
    assert run_schedule(assembly, schedule).violations == []
    assert run_schedule(assembly, schedule, mutant=by_name(mutant)).violations != []


def test_a_malformed_foreign_event_is_dead_lettered_with_a_reason(assembly):
    schedule = Schedule(
        outcomes=("completed",),
        crashes=(),
        actions=(Action("foreign-event", queue="AnalyticsQueueUrl", variant="malformed"),),
    )
    assert run_schedule(assembly, schedule).violations == []


def _foreign(assembly, kinds, variant):
    """The events `foreign-event` (`variant`) sends to the notify queue after `kinds` are placed,
    and the ones the app itself delivered there."""
    with chaos_cloud(assembly) as cloud:
        placed = [place(cloud, kind, f"foreign-{i}-{kind}", index=i) for i, kind in enumerate(kinds)]
        foreign_event(cloud, Action("foreign-event", queue="NotifyQueueUrl", variant=variant), placed)
        delivered = [json.loads(body) for body in cloud.delivered.get("NotifyQueueUrl", {}).values()]
        return [json.loads(sent.body) for sent in cloud.foreign.events], delivered, placed


def test_a_foreign_event_is_one_the_app_delivered_with_one_thing_changed(assembly):
    sent, delivered, placed = _foreign(assembly, ("completed",), "malformed")
    (event,) = sent
    (model,) = delivered
    assert model["order_id"] == placed[0].entity_id
    assert event == {k: v for k, v in model.items() if k != "order_id"}  # malformed: no entity id
    sent, _, _ = _foreign(assembly, ("completed",), "no-entity")
    assert sent[0]["order_id"] == unknown_id()


def test_no_foreign_event_where_the_app_delivered_none_to_imitate(assembly):
    # A world whose only order failed delivered no event: nothing to imitate, nothing is sent.
    sent, delivered, _ = _foreign(assembly, ("payment-declined",), "no-entity")
    assert (sent, delivered) == ([], [])


def test_another_caller_refused_for_the_catalog_is_not_told_a_key_is_in_use(assembly):
    # Given order 0's sku removed, then another caller sending order 0's key and body
    schedule = Schedule(
        outcomes=("completed",),
        crashes=(),
        actions=(Action("remove-sku"), Action("another-caller", variant="same-body")),
    )
    # Then its 422 UnknownSku is about the catalog, not the key (found on main by the first
    # measurement, when any 409/422 to a first use counted as a key in use)
    assert run_schedule(assembly, schedule).violations == []
