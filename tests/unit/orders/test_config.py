from __future__ import annotations

import pytest
from pydantic import ValidationError

from orders.config import MissingSetting, Settings


def test_settings_read_the_documented_variables():
    settings = Settings.from_env(
        {
            "SERVICE_NAME": "retrysafe",
            "STAGE": "dev",
            "FENCE_TTL_SECONDS": "60",
            "ORDERS_TABLE": "t",
            "OTHER": "x",
        }
    )
    assert (settings.service, settings.stage, settings.fence_ttl_seconds) == ("retrysafe", "dev", 60)
    assert settings.require("orders_table") == "t"
    with pytest.raises(MissingSetting, match="LEDGER_TABLE"):
        settings.require("ledger_table")


@pytest.mark.parametrize("env", [{}, {"STAGE": "has space"}, {"STAGE": "dev", "FENCE_TTL_SECONDS": "-1"}])
def test_bad_settings_fail_the_cold_start(env: dict[str, str]):
    with pytest.raises(ValidationError):
        Settings.from_env(env)
