"""`python -m ops.seed` and `python -m ops.invariants` against a resolved target (moto here)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from ops import invariants, seed
from ops.target import Target
from proof.catalog import load_seed

OUTPUTS = {
    "InventoryTableName": "inventory",
    "OrdersTableName": "orders",
    "PaymentsTableName": "payments",
    "LedgerTableName": "ledger",
    "NotificationsTableName": "notifications",
    "AggregatesTableName": "aggregates",
}


@pytest.fixture
def target(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> Target:
    resolved = Target(endpoint_url=None, region="us-east-1", outputs=OUTPUTS)
    monkeypatch.setattr(Target, "resolve", classmethod(lambda cls, **_: resolved))
    return resolved


def test_seed_is_idempotent_unless_reset(target: Target, ddb: Any, capsys: pytest.CaptureFixture[str]):
    # The ddb fixture seeded already: a second seed writes nothing, a reset writes every sku
    assert seed.main([]) == 0
    assert "seeded 0 item(s)" in capsys.readouterr().out
    assert seed.main(["--reset"]) == 0
    assert "seeded 20 item(s)" in capsys.readouterr().out
    assert len(load_seed()) == 20


def test_invariants_cli_prints_the_report_and_exits_by_its_verdict(
    target: Target, ddb: Any, capsys: pytest.CaptureFixture[str]
):
    assert invariants.main([]) == 0
    assert "every invariant holds" in capsys.readouterr().out

    boto3.client("dynamodb", region_name="us-east-1").update_item(
        TableName="inventory",
        Key={"pk": {"S": "sku#sku-1"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = stock - :q",
        ExpressionAttributeValues={":q": {"N": "1"}},
    )
    assert invariants.main(["--json"]) == 1
    assert '"ok": false' in capsys.readouterr().out
