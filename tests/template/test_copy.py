"""`make new-service` end to end: copier renders the template (copier.yml, template/) from this
checkout into a new directory: a lean service, its answers recorded for `copier update`, none of
this repository's results or its lab, and its own lint, unit tests and synth test (both stages,
cdk-nag) pass as generated."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from reliability.declaration import Entity
from tests.template.support import (
    LIBRARY,
    LIBRARY_REQUIREMENT,
    NOT_IN_A_COPY,
    ROOT,
    fast_tier,
    run,
    synth_tier,
)

# One copy for the module: under `make test`'s --dist loadgroup its tests share one worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("template-copy")]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("new-service") / "wallet-api"
    # The Makefile's own recipe; its toolchain stamps are taken as built (this venv runs it).
    run(
        [
            *("make", "-o", ".venv/.installed", "-o", "node_modules/.installed", "new-service"),
            *("NAME=wallet-api", "ENTITY=transfer", f"DEST={dest}"),
        ],
        ROOT,
    )
    return dest


def test_the_copy_is_the_template_rendered_with_the_answers_recorded(copy: Path) -> None:
    answers = yaml.safe_load((copy / ".copier-answers.yml").read_text())

    assert answers["service_name"] == "wallet-api"
    assert answers["entity_name"] == "transfer"
    assert answers["package_name"] == "wallet_api"
    assert Path(answers["_src_path"]) == ROOT  # where `copier update` finds the template
    assert answers["_commit"]
    assert (copy / "functions" / "wallet_api" / "workflow.py").is_file()
    assert not list(copy.rglob("*.jinja")), "every template file is rendered"
    assert "{{" not in (copy / "functions" / "wallet_api" / "workflow.py").read_text()
    assert (copy / ".git").is_dir()


def test_the_copy_holds_none_of_this_repositorys_results_nor_its_lab(copy: Path) -> None:
    files = [path.relative_to(copy) for path in copy.rglob("*") if ".git" not in path.parts]
    assert files
    assert not [path for path in files if set(path.parts) & set(NOT_IN_A_COPY)]
    assert not [path for path in files if path.suffix == ".md" and path.name != "README.md"]


def test_the_copy_reaches_the_library_as_a_dependency(copy: Path) -> None:
    requirements = (copy / "requirements.txt").read_text().splitlines()
    assert LIBRARY_REQUIREMENT in requirements
    assert not (copy / "functions" / "reliability").exists()
    name = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]["name"]
    assert LIBRARY_REQUIREMENT.startswith(f"{name}[cdk]")


def test_the_copy_pins_its_transitive_dependencies_as_this_repository_does(copy: Path) -> None:
    # template/constraints.txt is a link to this repository's: one list of pins, rendered as a file
    assert (ROOT / "template" / "constraints.txt").is_symlink()
    assert not (copy / "constraints.txt").is_symlink()
    assert (copy / "constraints.txt").read_text() == (ROOT / "constraints.txt").read_text()
    assert "-c constraints.txt" in (copy / "Makefile").read_text()


def test_the_default_library_requirement_is_the_librarys_version() -> None:
    # copier.yml's default names the published library; it must follow lib/reliability's version.
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]
    default = yaml.safe_load((ROOT / "copier.yml").read_text())["reliability_requirement"]["default"]
    assert default == f"{project['name']}[cdk]=={project['version']}"


def test_the_default_lab_requirement_is_the_labs_version_and_it_takes_this_library() -> None:
    lab = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text())["project"]
    default = yaml.safe_load((ROOT / "copier.yml").read_text())["lab_requirement"]["default"]
    assert default == f"{lab['name']}=={lab['version']}"
    library = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]
    (needed,) = [Requirement(r) for r in lab["dependencies"] if r.startswith(library["name"])]
    assert library["version"] in needed.specifier  # a copy installs both defaults together


def test_the_copys_lint_and_unit_tests_pass_as_generated(copy: Path) -> None:
    done = fast_tier(copy)
    assert " passed" in done.stdout


def test_the_copys_make_lint_passes_mypy_strict_included(copy: Path) -> None:
    # The copy's own `make lint` (ruff, then mypy --strict over its functions and tests), this
    # checkout's library on mypy's path
    run(["make", "lint", f"PY={sys.executable}"], copy, MYPYPATH=str(LIBRARY / "src"))


def test_the_copys_stacks_synthesize_with_cdk_nag(copy: Path) -> None:
    done = synth_tier(copy)
    assert " passed" in done.stdout


def test_the_template_derives_ids_and_keys_through_the_librarys_entity() -> None:
    # An entity's ids and partitions are the declaration's (`reliability.declaration.Entity`): the
    # template (and the wallet that replaces its domain) calls them, never defines its own copy.
    methods = [name for name, value in vars(Entity).items() if not name.startswith("_") and callable(value)]
    copied = re.compile(r"^def (" + "|".join(methods) + r")\(", re.MULTILINE)
    sources = [
        *(ROOT / "template" / "functions").rglob("*.py*"),
        *(ROOT / "tests/template/wallet").rglob("*.py"),
    ]
    assert methods
    assert [
        f"{path.relative_to(ROOT)}: {m.group(1)}"
        for path in sources
        for m in copied.finditer(path.read_text())
    ] == []
