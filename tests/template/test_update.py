"""`copier update` takes a later template change into an existing copy with a three-way merge: the
template at tag v1.0.0 (a clone of this checkout, its working tree's copier.yml and template/),
a copy generated and committed, a change to the template tagged v1.1.0, then `copier update` in
the copy: the change arrives, the copy's own edit stays, and its lint and unit tests still pass."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.template.support import LIBRARY_REQUIREMENT, ROOT, VENV_BIN, fast_tier, git, run

pytestmark = pytest.mark.slow

PROVIDER = Path("functions", "{{package_name}}", "provider.py.jinja")
LIMIT = re.compile(r"^ACCEPTED_UP_TO = (\d+)$", re.M)


def _template_repo(where: Path) -> Path:
    """A clone of this checkout whose copier.yml and template/ are the working tree's, tagged v1.0.0."""
    repo = where / "template-repo"
    git(where, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(repo))
    shutil.copy2(ROOT / "copier.yml", repo / "copier.yml")
    shutil.rmtree(repo / "template", ignore_errors=True)
    shutil.copytree(ROOT / "template", repo / "template", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "add", "--all", "copier.yml", "template")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "A: the template as it is")
    git(repo, "tag", "v1.0.0")
    return repo


def test_copier_update_brings_a_template_change_into_a_copy_that_keeps_its_own_edits(tmp_path: Path) -> None:
    repo = _template_repo(tmp_path)
    copy = tmp_path / "wallet-api"
    copier = str(VENV_BIN / "copier")
    run(
        [
            *(copier, "copy", "--defaults", "--quiet", "--data", "service_name=wallet-api"),
            *("--data", "entity_name=transfer", "--data", f"reliability_requirement={LIBRARY_REQUIREMENT}"),
            *(str(repo), str(copy)),
        ],
        tmp_path,
    )
    assert yaml.safe_load((copy / ".copier-answers.yml").read_text())["_commit"] == "v1.0.0"
    git(copy, "init", "--quiet")
    # The team's own edit, which the update must keep
    with (copy / ".gitignore").open("a") as ignore:
        ignore.write("wallet-local/\n")
    git(copy, "add", "--all")
    git(copy, "commit", "--quiet", "-m", "Start wallet-api")

    # A template fix after the copy was made: the fake provider accepts more
    provider = repo / "template" / PROVIDER
    old = int(LIMIT.search(provider.read_text())[1])  # type: ignore[index]
    provider.write_text(LIMIT.sub(f"ACCEPTED_UP_TO = {old + 2}", provider.read_text()))
    git(repo, "commit", "--quiet", "-am", "B: the fake provider accepts more")
    git(repo, "tag", "v1.1.0")

    run([copier, "update", "--defaults", "--quiet"], copy)

    answers = yaml.safe_load((copy / ".copier-answers.yml").read_text())
    assert answers["_commit"] == "v1.1.0"
    assert answers["entity_name"] == "transfer"
    rendered = (copy / "functions" / "wallet_api" / "provider.py").read_text()
    assert f"ACCEPTED_UP_TO = {old + 2}" in rendered
    assert "wallet-local/" in (copy / ".gitignore").read_text()
    assert fast_tier(copy).returncode == 0
