"""`reliability.settings.settings_of`: a Lambda handler's settings class is the `SETTINGS` its
module names (`<package>.handlers.<module>.handler`); a module naming none, or something else,
is refused with a TypeError naming the handler."""

from __future__ import annotations

import sys
import types

import pytest
from two_step_service import SERVICE

from reliability import settings as kinds
from reliability.settings import settings_of


class StepSettings(kinds.StepSettings):
    DECLARATION = SERVICE


@pytest.fixture
def handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A service's handler modules, nested as a deployed package's are."""
    modules = {
        "steps": StepSettings,
        "not_settings": dict,  # a class, but no settings class
        "an_instance": "StepSettings",
    }
    for name, settings in modules.items():
        module = types.ModuleType(f"visits_svc.handlers.{name}")
        module.SETTINGS = settings  # type: ignore[attr-defined]
        module.settings = kinds.SweepSettings  # type: ignore[attr-defined] # a lower-case name is not it
        module.handler = lambda event, context: None  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, module.__name__, module)
    plain = types.ModuleType("visits_svc.handlers.plain")
    plain.handler = lambda event, context: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, plain.__name__, plain)


@pytest.mark.usefixtures("handlers")
def test_a_handlers_settings_class_is_the_one_its_module_names() -> None:
    assert settings_of("visits_svc.handlers.steps.handler") is StepSettings


@pytest.mark.usefixtures("handlers")
@pytest.mark.parametrize("module", ["plain", "not_settings", "an_instance"])
def test_a_module_naming_no_settings_class_is_refused_naming_the_handler(module: str) -> None:
    handler = f"visits_svc.handlers.{module}.handler"
    with pytest.raises(TypeError) as refused:
        settings_of(handler)
    assert (
        str(refused.value) == f"{handler}: its module's SETTINGS is not a reliability.settings settings class"
    )
