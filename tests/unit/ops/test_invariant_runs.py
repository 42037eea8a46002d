"""ops.invariants counts effects per run: `make rerun` starts run N+1 of a FAILED order, so an order
may hold a compensated FAILED run beside its current one, and each run is judged on its own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ops.invariants.effects import Effects, new_counts, refused, run_of, tally_items
from ops.invariants.rules import check_runs
from ops.service import hook_counts
from orders import items as layout
from orders.domain import completed_fact
from orders.workflow import SERVICE
from reliability.keys import execution_token

EFFECTS = Effects.of(SERVICE, hook_counts(SERVICE))
FAILED_RUN = {  # a declined run: reserved, charge failed, released, marked FAILED
    "ReserveInventory": "COMPLETED",
    "ChargePayment": "FAILED",
    "ReleaseInventory": "COMPLETED",
    "MarkFailed": "COMPLETED",
}
COMPLETED_RUN = {
    "ReserveInventory": "COMPLETED",
    "ChargePayment": "COMPLETED",
    "RecordLedger": "COMPLETED",
    "PublishEvents": "COMPLETED",
    "MarkCompleted": "COMPLETED",
}
DECLINED = Counter({"ReserveInventory": 1, "ReleaseInventory": 1, refused("ChargePayment"): 1})
COMPLETED = Counter(ReserveInventory=1, ChargePayment=1, RecordLedger=1, notify=1, analytics=1)


def _check(
    order: Mapping[str, object], runs: Mapping[int, Counter[str]], fences: Mapping[int, dict[str, str]]
):
    return check_runs(EFFECTS, order, runs, lambda run: fences.get(run, {}))


def test_each_effect_item_says_its_run():
    token = execution_token(stage="dev", business_id="o-1", run=2)
    event_id = completed_fact("o-1", 2).id(stage="dev")
    pk = layout.order_pk("o-1")
    assert run_of({"pk": pk, "sk": f"{layout.RESERVATION}{token}", "token": token}) == 2
    assert run_of({"pk": pk, "sk": f"{layout.CHARGE}k", "reference": token}) == 2
    assert run_of({"pk": pk, "sk": f"{layout.ENTRY}{token}"}, layout.ENTRY) == 2
    assert run_of({"pk": pk, "sk": f"{layout.NOTIFICATION}{event_id}", "event_id": event_id}) == 2
    assert run_of({"pk": layout.event_pk(event_id), "sk": layout.MARKER_SK, "event_id": event_id}) == 2
    # A provider call's item names no run: it is counted with the order, never judged per run
    assert run_of({"pk": pk, "sk": f"{layout.CALL}2026-11-24T00:00:00#u"}) == 0


def test_the_same_effect_in_two_runs_is_two_runs_effects_not_a_double():
    counts = new_counts()
    tokens = [execution_token(stage="dev", business_id="o-1", run=run) for run in (1, 2)]
    items = [{"pk": layout.order_pk("o-1"), "sk": f"{layout.ENTRY}{t}"} for t in tokens]
    tally_items(items, layout.ENTRY, "RecordLedger", counts, EFFECTS.entity_id)
    assert {run: c["RecordLedger"] for run, c in counts["o-1"].items()} == {1: 1, 2: 1}


def test_a_rerun_after_a_compensated_failed_run_passes():
    order = {"pk": layout.order_pk("o-1"), "status": "COMPLETED", "run": 2}
    row = _check(order, {1: DECLINED, 2: COMPLETED}, {1: FAILED_RUN, 2: COMPLETED_RUN})
    assert row.violations == []
    assert (row.run, row.effects["ReserveInventory"], row.effects["ReleaseInventory"]) == (2, 1, 0)
    assert (row.effects[refused("ChargePayment")], row.effects["ChargePayment"]) == (0, 1)


def test_an_earlier_run_is_judged_as_the_failed_run_it_was():
    order = {"pk": layout.order_pk("o-1"), "status": "COMPLETED", "run": 2}
    # Its reservation never released, and its fences say it charged
    row = _check(
        order,
        {1: Counter({"ReserveInventory": 1, refused("ChargePayment"): 1}), 2: COMPLETED},
        {1: {**FAILED_RUN, "ChargePayment": "COMPLETED"}, 2: COMPLETED_RUN},
    )
    assert row.violations == [
        "run 1 (before the rerun): FAILED but its ReserveInventory effect was not undone by ReleaseInventory",
        "run 1 (before the rerun): step ChargePayment recorded DONE without its ChargePayment effect",
        "run 1 (before the rerun): step ReleaseInventory recorded DONE without its ReleaseInventory effect",
        "run 1 (before the rerun): a refusal of ChargePayment's call on a FAILED run "
        "whose ChargePayment is DONE",
    ]


def test_a_succeeded_charge_in_a_failed_run_is_a_violation_even_after_the_rerun():
    order = {"pk": layout.order_pk("o-1"), "status": "FAILED", "run": 2}
    row = _check(order, {1: DECLINED + Counter(ChargePayment=1), 2: DECLINED}, {1: FAILED_RUN, 2: FAILED_RUN})
    assert (
        "run 1 (before the rerun): FAILED but has 1 ChargePayment effect(s), which no step compensates"
        in row.violations
    )


def test_effects_of_a_run_the_order_never_reached_are_a_violation():
    order = {"pk": layout.order_pk("o-1"), "status": "COMPLETED", "run": 1}
    row = _check(order, {1: COMPLETED, 2: Counter(ReserveInventory=1)}, {1: COMPLETED_RUN})
    assert row.violations == [
        "effects of run 2, which it never reached (it is on run 1): {'ReserveInventory': 1}"
    ]
