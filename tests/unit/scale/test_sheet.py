"""The scale sheet: binding order, costs, and docs/scale.md is what `make scale-sheet` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.synth import synthesize
from scale.sheet import cost_per_order, limits, per_order, render
from scale.topology import Topology, read

SHEET = Path(__file__).resolve().parents[3] / "docs" / "scale.md"


@pytest.fixture(scope="module")
def prod() -> Topology:
    return read(synthesize("prod"), "prod")


def test_limits_are_sorted_and_the_provider_binds_first_in_prod(prod: Topology) -> None:
    found = limits(prod)
    assert [lim.orders_per_second for lim in found] == sorted(lim.orders_per_second for lim in found)
    assert found[0].what == "provider rate limit (payments)"
    assert found[0].orders_per_second == prod.capacity.provider_requests_per_second


def test_an_order_costs_mostly_step_functions_transitions(prod: Topology) -> None:
    usage = per_order(prod)
    assert usage["transitions"] == len(prod.happy_path()) == 6
    costs = cost_per_order(usage)
    assert max(costs, key=lambda k: costs[k]) == "Step Functions"


def test_docs_scale_md_is_the_generated_sheet(prod: Topology) -> None:
    assert SHEET.read_text() == render(prod), "docs/scale.md is stale: run `make scale-sheet`"


def test_express_bills_64_mb_chunks_and_rounds_its_duration_up_to_100_ms() -> None:
    from ops.costs import express_billed_gb_seconds  # noqa: PLC0415

    assert express_billed_gb_seconds(0.5) == pytest.approx(0.0625 * 0.5)
    assert express_billed_gb_seconds(0.501) == pytest.approx(0.0625 * 0.6)
    assert express_billed_gb_seconds(0.01) == pytest.approx(0.0625 * 0.1)
    assert express_billed_gb_seconds(1.0, memory_mb=65) == pytest.approx(0.125 * 1.0)
