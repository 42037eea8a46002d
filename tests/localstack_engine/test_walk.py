"""`make e2e-localstack` (localstack_engine.walk) without an engine: the steps it takes, in order,
with the documented LocalStack commands, and that whatever fails, what was deployed is destroyed
and the engine stops."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager

import pytest

from localstack_engine import walk

ENDPOINT = "http://127.0.0.1:4566"
ARN = "arn:aws:lambda:us-east-1:000000000000:layer:retrysafe-powertools:1"


class Recorder:
    """Runs nothing: records each step with the environment it got, fails the ones named."""

    def __init__(self, failing: set[str] | None = None, interrupt: str | None = None) -> None:
        self.failing = failing or set()
        self.interrupt = interrupt
        self.ran: list[tuple[walk.Step, dict[str, str]]] = []

    def __call__(self, step: walk.Step, environ: Mapping[str, str]) -> walk.Outcome:
        self.ran.append((step, {**environ, **step.env}))
        if step.name == self.interrupt:
            raise KeyboardInterrupt
        code = 2 if step.name in self.failing else 0
        return walk.Outcome(step.name, code, 0.1, f"pip noise\n{ARN}" if step.name == "layer" else "")

    @property
    def names(self) -> list[str]:
        return [step.name for step, _ in self.ran]


def _engine(events: list[str]) -> Callable[[int], AbstractContextManager[str]]:
    @contextlib.contextmanager
    def engine(port: int) -> Iterator[str]:
        events.append(f"up {port}")
        try:
            yield ENDPOINT
        finally:
            events.append("down")

    return engine


@pytest.fixture(autouse=True)
def _engine_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walk, "engine_python", lambda: ("3.11", "x86_64"))


def test_the_path_runs_readmes_commands_against_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "prod-admin")  # must never reach a step
    monkeypatch.setenv("MAKELEVEL", "1")  # nor an enclosing make's level (a sub-make prints its directory)
    events: list[str] = []
    run = Recorder()

    code = walk.main([], engine=_engine(events), run=run)

    assert code == 0
    assert events == ["up 4566", "down"]
    assert [" ".join(step.command) for step, _ in run.ran] == [
        "make layer TARGET=localstack LAYER_ARGS=--python 3.11 --arch x86_64",
        "make deploy STAGE=dev TARGET=localstack",
        "make seed",
        "make test-e2e",
        "make destroy STAGE=dev TARGET=localstack",
    ]
    for step, env in run.ran:
        assert env["AWS_ENDPOINT_URL"] == ENDPOINT
        assert "AWS_PROFILE" not in env
        assert "MAKELEVEL" not in env
        if step.name != "layer":
            assert env["POWERTOOLS_LAYER_ARN"] == ARN  # the layer step's last line
    e2e_env = run.ran[3][1]
    assert (e2e_env["RETRYSAFE_E2E_TARGET"], e2e_env["RETRYSAFE_STAGE"]) == ("localstack", "dev")


@pytest.mark.parametrize(
    ("failing", "ran"),
    [
        ({"layer"}, ["layer"]),
        ({"deploy"}, ["layer", "deploy", "destroy"]),
        ({"e2e"}, ["layer", "deploy", "seed", "e2e", "destroy"]),
        ({"destroy"}, ["layer", "deploy", "seed", "e2e", "destroy"]),
    ],
)
def test_a_failed_step_fails_the_walk_and_what_was_deployed_is_destroyed(
    failing: set[str], ran: list[str]
) -> None:
    events: list[str] = []
    run = Recorder(failing)

    code = walk.main([], engine=_engine(events), run=run)

    assert code == 1
    assert run.names == ran
    assert events == ["up 4566", "down"]


def test_an_interrupted_walk_still_destroys_and_stops_the_engine() -> None:
    events: list[str] = []
    run = Recorder(interrupt="e2e")

    with pytest.raises(KeyboardInterrupt):
        walk.main(["--port", "4570"], engine=_engine(events), run=run)

    assert run.names == ["layer", "deploy", "seed", "e2e", "destroy"]
    assert events == ["up 4570", "down"]
