"""cfn-lint on every synthesized template: no errors (W3005, CDK's redundant DependsOn, is a
warning and allowed)."""

from __future__ import annotations

import pytest
from cfnlint.api import lint_file

from emulator.synth import stack_names, synthesize


@pytest.mark.parametrize("stage", ["dev", "prod", "local"])
def test_templates_have_no_cfn_lint_errors(stage: str) -> None:
    assembly = synthesize(stage)
    names = stack_names(assembly)
    assert len(names) == 2
    for name in names:
        matches = lint_file(assembly / f"{name}.template.json")
        errors = [f"{m.rule.id} {m.message} ({m.path})" for m in matches if m.rule.severity == "error"]
        assert errors == [], name
        unexpected = {m.rule.id for m in matches} - {"W3005"}
        assert unexpected == set(), name
