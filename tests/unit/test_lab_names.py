"""The lab (every module of lab/src), the scale model and the benches name nothing the sample
declares: they read the service's declaration and its proof (`ops.service`, `ops.outcomes`,
`ops.roles`), never its steps, tables or consumers by name. The names come from the sample's
declaration, so one added to it is checked. And the lab's own names say `entity` where they mean
the service's business entity (`reliability.declaration.Entity`), never the sample's `order`."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orders.workflow import SERVICE
from tests.unit.test_library_is_generic import declared_names

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("scale", "bench", "lab/src")
# A threading.Condition's own method, not the sample's consumer of that name.
NOT_A_NAME = re.compile(r"\.notify\(\)")


def _sources() -> list[Path]:
    paths = [ROOT / entry for entry in GENERIC]
    return sorted(p for path in paths for p in (sorted(path.rglob("*.py")) if path.is_dir() else [path]))


def test_the_generic_lab_names_nothing_the_sample_declares() -> None:
    names = declared_names(SERVICE)
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in _sources()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in pattern.finditer(NOT_A_NAME.sub("", line))
    ]
    assert found == []


# Names in lab/src that say "order" and mean no entity, each with why: (path, kind, name) -> why.
PLAIN_ORDER = {
    ("lab/src/chaos/points.py", "keyword", "order"): "dataclass(order=True): hits compare and sort",
    ("lab/src/ops/load/__main__.py", "flag", "--orders"): (
        "the old name of --entities, kept so the command results/ops/load.{json,md} recorded still runs"
    ),
}


def _names(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, kind, name) of every name the code defines or uses, and the command-line flags and
    dests it declares (`add_argument`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.lineno, "def", node.name
        elif isinstance(node, ast.arg):
            yield node.lineno, "argument", node.arg
        elif isinstance(node, ast.Name):
            yield node.lineno, "name", node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, "attribute", node.attr
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.lineno, "keyword", node.arg
        elif isinstance(node, ast.alias):
            yield node.lineno, "import", node.asname or node.name
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
            flags += [
                k.value.value
                for k in node.keywords
                if k.arg in ("dest", "metavar") and isinstance(k.value, ast.Constant)
            ]
            yield from ((node.lineno, "flag", str(flag)) for flag in flags)


def order_names(source: Path, root: Path = ROOT) -> dict[tuple[str, str, str], int]:
    """Every name under `source` that says "order", by (path from `root`, kind, name), with the
    line it is first at."""
    found: dict[tuple[str, str, str], int] = {}
    for path in sorted(source.rglob("*.py")):
        for line, kind, name in _names(ast.parse(path.read_text())):
            if "order" in name.lower():
                found.setdefault((path.relative_to(root).as_posix(), kind, name), line)
    return found


def test_the_labs_names_say_entity_where_they_mean_the_services_entity() -> None:
    found = order_names(ROOT / "lab" / "src")
    assert [
        f"{path}:{line}: {kind} {name}"
        for (path, kind, name), line in found.items()
        if (path, kind, name) not in PLAIN_ORDER
    ] == []
    assert set(PLAIN_ORDER) <= set(found), "an allowed name that is gone leaves the list"


def test_a_name_that_says_order_is_found(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text(
        "def rerun_order(order_id):\n    parser.add_argument('--order', dest='order_id')\n"
    )
    found = {(kind, name) for (_, kind, name) in order_names(tmp_path, tmp_path)}
    assert {("def", "rerun_order"), ("argument", "order_id"), ("flag", "--order")} <= found


@pytest.mark.parametrize(
    ("tool", "argv"),
    [
        ("ops.idem", ["fence-show", "--help"]),
        ("ops.redrive", ["workflow", "--help"]),
        ("ops.story", ["--help"]),
    ],
)
def test_the_tools_that_act_on_one_entity_name_it_by_id(tool: str, argv: list[str], capsys: Any) -> None:
    # The Makefiles (the sample's, the template's) pass `ID=` on as `--id` or the positional ID
    with pytest.raises(SystemExit):
        importlib.import_module(f"{tool}.__main__" if tool == "ops.story" else tool).main(argv)
    shown = capsys.readouterr().out
    assert re.search(r"--id ENTITY_ID|\[ID\]", shown), shown
    assert "--order" not in shown
