"""The round-trip counts are what the design says (behaviour, not time)."""

from __future__ import annotations

import pytest

from bench.roundtrips import Row, measure, render


@pytest.fixture(scope="module")
def rows() -> dict[str, Row]:
    return {row.approach.split(" (")[0]: row for row in measure()}


def test_atomic_fence_costs_one_round_trip_first_and_on_replay(rows: dict[str, Row]) -> None:
    row = rows["atomic fence"]
    assert (row.first_calls, row.replay_calls) == (["TransactWriteItems"], ["TransactWriteItems"])


def test_leased_fence_costs_claim_plus_complete_and_one_on_replay(rows: dict[str, Row]) -> None:
    external = rows["leased fence, external effect"]
    assert (external.first_calls, external.replay_calls) == (["UpdateItem", "UpdateItem"], ["UpdateItem"])
    atomic = rows["leased fence, DynamoDB effect"]
    assert (atomic.first_calls, atomic.replay_calls) == (["UpdateItem", "TransactWriteItems"], ["UpdateItem"])


def test_the_comparisons(rows: dict[str, Row]) -> None:
    powertools = rows["Powertools `idempotent_function`"]
    assert (powertools.first_run, powertools.replay) == (3, 1)
    naive = rows["naive get-then-put"]
    assert (naive.first_calls, naive.replay_calls) == (["GetItem", "PutItem", "PutItem"], ["GetItem"])


def test_render_is_a_markdown_table(rows: dict[str, Row]) -> None:
    table = render(list(rows.values()))
    assert table.splitlines()[0].startswith("| approach | first run | replay |")
    assert len(table.splitlines()) == 2 + len(rows)
