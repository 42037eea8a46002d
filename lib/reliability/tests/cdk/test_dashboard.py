"""The decision dashboard shows every decision the telemetry emits, each on one panel."""

from __future__ import annotations

from reliability.cdk.dashboard import PANELS, decision_metrics
from reliability.telemetry import Decision


def test_every_decision_is_on_exactly_one_panel() -> None:
    assert sorted(decision_metrics()) == sorted(decision.value for decision in Decision)
    assert all(panel.decisions for panel in PANELS)
