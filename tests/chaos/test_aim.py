"""A mutant's search aims its random schedules at what the mutant changed: the action kinds that
reach its functions, measured (`chaos.aim`), are drawn first; the main run's draw is not aimed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chaos.aim import record_reaches
from chaos.draw import ACTIONS, Catalogue, Drawer
from chaos.mutants import MUTANTS, by_name
from chaos.single import catalogue as record_catalogue
from chaos.single import record_operators

pytestmark = pytest.mark.slow
SCHEDULES = 300


@pytest.fixture(scope="module")
def measured(assembly: Path) -> Catalogue:
    """The catalogue `python -m chaos.mutation` searches from, with what each action reaches."""
    catalogue = Catalogue.of(assembly, record_catalogue(assembly), record_operators(assembly))
    return dataclasses.replace(catalogue, reaches=record_reaches(assembly, catalogue))


def test_what_each_action_reaches_is_measured(measured):
    reaches = measured.reaches
    assert set(reaches) == set(ACTIONS)
    # a client's requests reach the API, a duplicate delivery the worker, `make rerun` its tool
    for client in ("retry", "change-body", "another-caller", "late-retry"):
        assert "api" in reaches[client], client
    assert "worker" in reaches["deliver"]
    assert "ops.rerun" in reaches["rerun"]
    assert "api" not in reaches["dlq-redrive"]


def test_the_main_run_s_draw_is_not_aimed(measured):
    assert measured.aim == ()  # the real run and the control draw every kind as before
    assert by_name("http-payload-hash").applies("api")
    assert "change-body" in measured.only(by_name("http-payload-hash").applies).aim


def test_a_mutant_s_search_draws_the_actions_that_reach_its_functions(measured):
    # Given each mutant whose functions a few kinds of action reach (a quarter of them at most:
    # the API's, a consumer's, an operator tool's), as the search draws for it
    specific = {}
    for mutant in MUTANTS:
        aimed = measured.only(mutant.applies)
        if 0 < len(aimed.aim) <= len(ACTIONS) // 4:
            specific[mutant.name] = aimed
    assert {"http-payload-hash", "caller-scope", "consumer-verifies", "rerun-own-write"} <= set(specific)
    for name, aimed in specific.items():
        drawer = Drawer(aimed, 20261126)
        drawn = [set(drawer.draw().kinds()) for _ in range(SCHEDULES)]
        # Then most of its schedules hold one of them, and each of them is common (unaimed, a
        # client's `change-body` was in 1 schedule in 7, and a seed's search could miss it)
        assert sum(bool(kinds & set(aimed.aim)) for kinds in drawn) >= 0.6 * SCHEDULES, name
        for kind in set(aimed.aim) - {"deliver"}:  # a plain delivery is no kind of fault
            assert sum(kind in kinds for kinds in drawn) >= 0.2 * SCHEDULES, (name, kind)
