"""copier.yml's questions: the derived defaults, and a bad answer refused before anything is
written (copier's validators), so a copy never carries a name its stacks or Python cannot use."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import copier
import pytest
import yaml

from tests.template.support import ROOT


def _copy(dest: Path, **data: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a dirty working tree is copied as it is
        copier.run_copy(str(ROOT), str(dest), data=data, defaults=True, vcs_ref="HEAD", quiet=True)
    answers: dict[str, Any] = yaml.safe_load((dest / ".copier-answers.yml").read_text())
    return answers


def test_the_package_and_the_id_prefix_are_derived_from_the_names(tmp_path: Path) -> None:
    answers = _copy(tmp_path, service_name="gift-cards", entity_name="card")
    assert (answers["package_name"], answers["entity_id_prefix"]) == ("gift_cards", "c-")
    assert (tmp_path / "functions" / "gift_cards" / "workflow.py").is_file()


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("service_name", "Payments"),
        ("service_name", "payments_api"),
        ("service_name", "a-service-name-over-twenty"),
        ("package_name", "2fast"),
        ("entity_name", "gift_card"),
        ("entity_id_prefix", "G-"),
        ("entity_id_prefix", "g"),
        ("reliability_requirement", "requests==2.0"),
    ],
)
def test_a_bad_answer_is_refused_and_nothing_is_written(tmp_path: Path, question: str, answer: str) -> None:
    dest = tmp_path / "copy"
    with pytest.raises(ValueError, match=f"question '{question}'"):
        _copy(dest, **{"service_name": "ok-service", question: answer})
    assert not dest.exists() or not any(dest.iterdir())
