"""The synth refuses a declaration whose entries disagree with themselves (infra/manifest.py): each
problem named, all at once. The lab's tools read a step's declared effect (`writes`, `record`,
`provider`, `status`), the IAM policy its `ports`: the two must agree."""

from __future__ import annotations

import dataclasses

import pytest

from infra import manifest
from reliability.declaration import Item


def _with_step(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> None:
    steps = tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in manifest.steps())
    monkeypatch.setattr(manifest, "steps", lambda: steps)


def _problems(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> str:
    _with_step(monkeypatch, name, **changes)
    with pytest.raises(manifest.ManifestError) as refused:
        manifest.check(set())
    return str(refused.value)


def _first(kind: str, **where: object) -> str:
    return next(
        s.name
        for s in manifest.steps()
        if s.kind == kind and all(getattr(s, k) == v for k, v in where.items())
    )


def test_the_sample_declaration_passes() -> None:
    manifest.check(set())


def test_an_item_written_outside_the_steps_ports_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an atomic step declaring a write to a table it has no port (no grant) for
    step = _first("atomic", status=None)
    problems = _problems(monkeypatch, step, writes=(Item("elsewhere", "x#"),))
    # Then the synth names the step and the table
    assert f"step {step}: writes items of ['elsewhere'], which are not among its ports" in problems


def test_a_record_must_be_an_item_the_step_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    step = next(s for s in manifest.steps() if s.record is not None)
    problems = _problems(monkeypatch, step.name, writes=())
    assert f"step {step.name}: record {step.record} must be an item its (atomic) effect writes" in problems


def test_a_leased_step_names_a_provider_among_its_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    step = _first("leased")
    problems = _problems(monkeypatch, step, provider=None)
    assert f"step {step}: a leased step names its provider" in problems


def test_an_atomic_step_has_no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    step = _first("atomic")
    problems = _problems(monkeypatch, step, provider="payments")
    assert f"step {step}: provider 'payments' is for a leased step's external call" in problems


def test_a_status_step_writes_the_entity_table(monkeypatch: pytest.MonkeyPatch) -> None:
    step = next(s for s in manifest.steps() if s.status is not None)
    problems = _problems(monkeypatch, step.name, ports=())
    entity = manifest.service().entity.table
    assert f"step {step.name}: sets the status, so its ports name the {entity!r} table" in problems


def test_a_consumer_writes_only_its_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer, *others = manifest.consumers()
    changed = dataclasses.replace(consumer, writes=(Item("elsewhere", "x#"),))
    monkeypatch.setattr(manifest, "consumers", lambda: (changed, *others))
    with pytest.raises(manifest.ManifestError) as refused:
        manifest.check(set())
    assert f"consumer {consumer.name}: writes items of ['elsewhere']" in str(refused.value)
