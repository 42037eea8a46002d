"""Mutants and the fence audit: a zombie's completion that lands is a violation, seen from outside."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.interleave import Pair
from chaos.mutants import MUTANTS, by_name, prune, replace_condition
from chaos.mutation import MutantResult, _search_pairs, load, replay

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


def test_a_rewrite_drops_the_names_and_values_its_condition_no_longer_uses():
    condition = "#state = :in_progress AND #fence = :token"
    params: dict[str, Any] = {
        "ConditionExpression": condition,
        "UpdateExpression": "SET #state = :done",
        "ExpressionAttributeNames": {"#state": "state", "#fence": "fencing_token"},
        "ExpressionAttributeValues": {":in_progress": {"S": "I"}, ":token": {"N": "1"}, ":done": {"S": "C"}},
    }
    assert replace_condition(condition, "#state = :in_progress")("f", "UpdateItem", params)
    assert params["ExpressionAttributeNames"] == {"#state": "state"}
    assert set(params["ExpressionAttributeValues"]) == {":in_progress", ":done"}
    prune(params)  # idempotent
    assert set(params["ExpressionAttributeValues"]) == {":in_progress", ":done"}


def test_mutant_names_are_unique():
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


@pytest.mark.parametrize("name", ["fence-owner-token", "fencing-counter"])
def test_a_zombie_completion_that_lands_is_a_violation_and_main_has_none(assembly, name):
    # Given the guard is off: a few zombie interleavings of ChargePayment (seeded) find a
    # completion by an attempt that no longer holds the fence
    result = MutantResult(name, "", False, 0, 0.0)
    pair = Pair("ChargePayment", late=True)
    assert _search_pairs(assembly, by_name(name), [pair], limit=12, seed=1, result=result), result

    # Then the audit names it, although the stores look right (one charge)
    assert "a stale attempt's completion landed" in result.violation

    # And the same interleaving on main is clean
    assert replay(assembly, result.reproducer, None) == []


RECORDED = [r for r in load() if r["caught"] and r["reproducer"]]


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_each_recorded_reproducer_catches_its_mutant_and_main_passes_it(assembly, recorded):
    # Given the reproducer `make chaos` found for this guard's mutant (chaos/results/mutants.json)
    # When it runs with the guard off, then on main
    caught = replay(assembly, recorded["reproducer"], by_name(recorded["name"]))
    clean = replay(assembly, recorded["reproducer"], None)

    # Then the mutant is caught and main is not
    assert caught, f"{recorded['name']}: the reproducer no longer catches it ({recorded['found_by']})"
    assert clean == []


def test_every_guard_on_the_list_has_a_recorded_catch_or_is_declared_equivalent():
    recorded = {r["name"]: r for r in load()}
    missing = [m.name for m in MUTANTS if not m.equivalent and not recorded.get(m.name, {}).get("caught")]
    assert missing == [], f"guards no recorded schedule catches: {missing}"
