"""Mutants and the fence audit: a zombie's completion that lands is a violation, seen from outside."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.interleave import Chooser, Pair, run_interleaving
from chaos.mutants import MUTANTS, by_name, prune, replace_condition

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# The zombie (attempt 0) claims ChargePayment, stalls; attempt 1, one lease later, takes over and
# stalls before completing; the zombie resumes and completes first (found by `explore`).
ZOMBIE_COMPLETES_FIRST = [0, 0, 0, 0, 0, 1, 1, 0, 0]


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
def test_a_zombie_completion_that_lands_is_a_violation(assembly, name):
    # Given the guard is off and the zombie completes while the successor holds the fence
    run = run_interleaving(
        assembly, Pair("ChargePayment", late=True), Chooser(ZOMBIE_COMPLETES_FIRST), mutant=by_name(name)
    )

    # Then the audit sees the stale completion, although the stores look right (one charge)
    assert any("a stale attempt's completion landed" in p for p in run.problems), run.problems


def test_on_main_the_same_interleaving_is_clean(assembly):
    run = run_interleaving(assembly, Pair("ChargePayment", late=True), Chooser(ZOMBIE_COMPLETES_FIRST))
    assert run.problems == []
