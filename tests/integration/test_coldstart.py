"""`make bench`'s cold start is the cold invocation (bench/coldstart.py): the import plus the first
invocation, clients included, of the handler and of a floor making the same AWS calls against the
same in-process replay; a replay the handler does not follow call for call fails the run."""

from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path

import pytest

from bench import coldstart
from bench.coldcalls import FirstInvocation, record

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


@pytest.fixture(scope="module")
def recorded(assembly: Path) -> dict[str, FirstInvocation]:
    return record(assembly)


def test_each_function_first_invocation_is_recorded_with_its_calls(
    recorded: dict[str, FirstInvocation],
) -> None:
    assert set(coldstart.FUNCTIONS_MEASURED) <= set(recorded)
    for function in coldstart.FUNCTIONS_MEASURED:
        invocation = recorded[function]
        assert invocation.calls, function  # every measured first invocation reaches AWS
        assert len(invocation.answers) >= len(invocation.calls), function
        assert {config for _, config, _, _ in invocation.calls} <= set(coldstart.CONFIGS), function
    api = recorded["Api"]
    assert (api.module, api.result["statusCode"]) == ("orders.handlers.api", 202)


def test_the_cold_invocation_counts_the_first_invocation(recorded: dict[str, FirstInvocation]) -> None:
    (row,) = coldstart.measure(recorded, pairs=1, functions=("Api",))
    assert (row.function, row.module, row.aws_calls) == (
        "Api",
        "orders.handlers.api",
        len(recorded["Api"].calls),
    )
    # The first invocation (botocore's clients, the calls) is counted on both sides, past the import.
    assert row.handler_ms > row.import_ms
    assert row.floor_ms > row.floor_import_ms
    assert row.ratio > 0
    assert row.import_ratio > 0


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (-1, "answered"),  # the handler's last call finds no answer: it fails (a 5xx, not the 202)
        (+1, "fewer calls"),  # one answer too many: the handler made fewer calls than recorded
    ],
)
def test_a_replay_the_handler_does_not_follow_fails_the_run(
    recorded: dict[str, FirstInvocation], tmp_path: Path, change: int, refusal: str
) -> None:
    api = recorded["Api"]
    answers = api.answers[:-1] if change < 0 else [*api.answers, api.answers[-1]]
    changed = dataclasses.replace(api, answers=answers)
    root = coldstart.task_root(tmp_path)
    case = root / "Api.case"
    case.write_bytes(marshal.dumps(changed.to_marshal()))
    with pytest.raises(RuntimeError, match=refusal):
        coldstart.probe(root, case, changed, changed.module)


def test_the_a_b_measures_a_revision_beside_this_tree(recorded: dict[str, FirstInvocation]) -> None:
    # When HEAD's asset (from git) is measured beside this tree's, with bytecode on the B side
    table = coldstart.compare(recorded, "HEAD", 1, ("Worker",), bytecode=True)
    # Then the row holds the floor and both sides' times and ratios, each side's replay checked
    (row,) = [line for line in table.splitlines() if line.startswith("| Worker |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert len(cells) == 6
    assert all(float(cell.rstrip("x")) > 0 for cell in cells[1:])
