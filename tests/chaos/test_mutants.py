"""Mutants: each guard off alone is caught by the reproducer `make chaos` found for it (the quick
subset replays those reproducers rather than searching again), and main passes the same schedule;
the score is a catch rate over fresh seeds, and anything short of every seed fails the run."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.mutants import MUTANTS, by_name, prune, replace_condition
from chaos.mutation import exit_code, load, replay, summarize, table
from chaos.search import Catch

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


def test_a_rewrite_drops_the_names_and_values_its_condition_no_longer_uses():
    condition = "#state = :in_progress AND #fence = :token"
    params: dict[str, Any] = {
        "ConditionExpression": condition,
        "UpdateExpression": "SET #state = :done",
        "ExpressionAttributeNames": {"#state": "state", "#fence": "fencing_token"},
        "ExpressionAttributeValues": {":in_progress": {"S": "I"}, ":token": {"N": "1"}, ":done": {"S": "C"}},
    }
    assert replace_condition(condition, "#state = :in_progress")("f", "UpdateItem", params, None)
    assert params["ExpressionAttributeNames"] == {"#state": "state"}
    assert set(params["ExpressionAttributeValues"]) == {":in_progress", ":done"}
    prune(params)  # idempotent
    assert set(params["ExpressionAttributeValues"]) == {":in_progress", ":done"}


def test_mutant_names_are_unique():
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


# Schedules a mutant's search found that main fails too: findings, pinned until fixed (none now;
# provider-reconcile's earlier reproducer caught it only through such a finding, the removed sku
# never compensated, fixed since: docs/how-it-works.md, "No stranded order, runs guarded by the order").
FOUND_ON_MAIN: dict[str, str] = {}

RECORDED = [r for r in load() if r["reproducer"]]


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_each_recorded_reproducer_catches_its_mutant_and_main_passes_it(assembly, recorded):
    # Given the reproducer `make chaos` found for this guard's mutant (results/chaos/mutants.json)
    # When it runs with the guard off, then on main (one replay each: the simulator is deterministic)
    caught = replay(assembly, recorded["reproducer"], by_name(recorded["name"]))
    clean = replay(assembly, recorded["reproducer"], None)

    # Then the mutant shows a violation main does not; and main is as recorded (clean, but for a
    # finding on main the search met on the way, which the results list)
    assert [v for v in caught if v not in clean], f"{recorded['name']}: the reproducer no longer catches it"
    if recorded["name"] in FOUND_ON_MAIN:
        assert any(FOUND_ON_MAIN[recorded["name"]] in v for v in clean), clean
    else:
        assert clean == recorded.get("main_violations", [])


def test_every_guard_on_the_list_has_a_recorded_catch_or_is_declared_equivalent():
    recorded = {r["name"]: r for r in load()}
    missing = [m.name for m in MUTANTS if not m.equivalent and not recorded.get(m.name, {}).get("reproducer")]
    # A guard the search cannot reach is declared with the reason (the search is blind there)
    assert missing == [m.name for m in MUTANTS if m.blind], f"guards no recorded schedule catches: {missing}"


def _searched(caught: list[bool]) -> list[Catch]:
    """One search per seed (0, 1, ...): caught after 3 + seed worlds, or not within 60."""
    return [Catch(seed, caught=c, schedules=3 + seed if c else 60) for seed, c in enumerate(caught)]


def test_the_score_is_the_catch_rate_over_the_seeds_and_anything_short_of_every_seed_fails():
    # Given two mutants searched from five seeds each, one caught from all, one from four
    every, most = MUTANTS[0], MUTANTS[4]
    assert not every.equivalent
    assert not most.equivalent
    results = summarize(
        [every, most],
        {
            every.name: _searched([True] * 5),
            most.name: _searched([True, True, False, True, True]),
        },
    )
    # Then the rates and the medians of the worlds to the catch (over the seeds that caught it)
    assert [(r.rate, r.median) for r in results] == [((5, 5), 5), ((4, 5), 5)]
    assert [r.caught for r in results] == [True, False]
    # and the run fails: a mutant caught 4/5 is not caught within the budget
    assert exit_code(results) == 1
    assert exit_code(results[:1]) == 0
    assert "**4/5**" in "\n".join(table(results))


def test_an_equivalent_mutant_is_listed_apart_and_does_not_fail_the_run():
    equivalent = next(m for m in MUTANTS if m.equivalent)
    results = summarize([equivalent], {equivalent.name: _searched([False])})
    assert exit_code(results) == 0
    assert "equivalent (0/1)" in "\n".join(table(results))


def test_a_mutant_declared_equivalent_that_a_search_catches_fails_the_run():
    # A catch is a world that tells the mutant apart: the declaration is refuted, not listed apart
    equivalent = next(m for m in MUTANTS if m.equivalent)
    results = summarize([equivalent], {equivalent.name: _searched([True])})
    assert exit_code(results) == 1
    lines = table(results)
    assert "1 declared equivalent yet caught (the declaration is refuted)" in lines[0]
    assert "**refuted equivalent (1/1)**" in "\n".join(lines)


def test_each_old_behaviour_of_issue_10_was_found_by_the_random_search():
    # Not by a hand-written schedule: the recorded reproducer is hypothesis' shrunk schedule
    recorded = {r["name"]: r for r in load()}
    old = [m.name for m in MUTANTS if m.issue10]
    assert len(old) == 5
    found = [name for name in old if not by_name(name).blind]
    assert {name: recorded[name]["found_by"].split(" ", 1)[0] for name in found} == dict.fromkeys(
        found, "random"
    )
