"""The recorded figures are what their commands write now: each results file's Markdown is its
command's own rendering of the JSON beside it, with the field names and labels the command uses
today. A command whose wording or fields changed (the lab went generic: `accepted_orders` became
`accepted_entities`, the scale model names its provider from the declaration) fails here until its
results are recorded again, instead of the site quoting a format no command writes any more."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ops.fuzz.__main__ import _markdown as fuzz_markdown
from ops.fuzz.__main__ import _schemathesis_markdown as schemathesis_markdown
from ops.fuzz.oracle import Tally
from ops.load.__main__ import _markdown as load_markdown
from scale.model import PROVIDER_STEPS
from scale.report import render as scale_markdown
from tests.docs.sections import ROOT

# (Markdown file, the JSON written beside it, the command's renderer of the one from the other)
RENDERED: tuple[tuple[str, str, Callable[[dict[str, Any]], str]], ...] = (
    ("results/ops/fuzz.md", "results/ops/fuzz.json", fuzz_markdown),
    ("results/ops/schemathesis.md", "results/ops/schemathesis.json", schemathesis_markdown),
    ("results/ops/load.md", "results/ops/load.json", load_markdown),
    ("scale/results/report.md", "scale/results/report.json", scale_markdown),
)


def _json(path: str) -> Any:
    return json.loads((ROOT / path).read_text())


def provider_labels_not_written(report: dict[str, Any], providers: set[str]) -> list[str]:
    """The "<provider> provider" throttle labels of a scale report that name no provider the
    model throttles today."""
    return sorted(
        {
            f"{name}: {label}"
            for name, run in report.items()
            for label in run["throttles"]
            if label.endswith(" provider") and label.removesuffix(" provider") not in providers
        }
    )


@pytest.mark.parametrize(("markdown", "figures", "render"), RENDERED, ids=[row[0] for row in RENDERED])
def test_each_results_page_is_its_commands_rendering_of_its_figures(
    markdown: str, figures: str, render: Callable[[dict[str, Any]], str]
) -> None:
    assert (ROOT / markdown).read_text() == render(_json(figures)), (
        f"{markdown} is not what its command writes from {figures} now: record them again"
    )


def test_the_fuzz_figures_have_the_fields_the_fuzz_counts_today() -> None:
    recorded = list(_json("results/ops/fuzz.json")["tally"])
    assert recorded == list(Tally().as_dict())


def test_the_scale_report_names_the_providers_the_model_throttles_today() -> None:
    assert provider_labels_not_written(_json("scale/results/report.json"), set(PROVIDER_STEPS.values())) == []


def test_a_provider_label_the_model_no_longer_writes_is_found() -> None:
    report = {"soak": {"throttles": {"payment provider": 3, "Lambda worker": 1, "payments provider": 2}}}
    assert provider_labels_not_written(report, {"payments"}) == ["soak: payment provider"]
