"""chaos.local aims its real worker deaths at the roles the declaration gives steps, not at names."""

from __future__ import annotations

from dataclasses import replace

from chaos.local import crash_points
from ops.service import service
from reliability.declaration import Step


def test_the_samples_points_are_the_four_it_always_had():
    assert crash_points(service()) == (
        "fence:after-effect:ChargePayment@charge-payment",
        "after:DynamoDB.TransactWriteItems@reserve-inventory",
        "after:SQS.SendMessage@publish-events",
        "after:DynamoDB.TransactWriteItems@mark-completed",
    )


def test_a_transfer_gets_points_in_its_own_steps():
    hold = Step(name="HoldFunds", kind="atomic", effect="w:hold", description="hold")
    send = Step(name="SendTransfer", kind="leased", effect="w:send", description="send", provider="bank")
    settle = Step(name="Settle", kind="atomic", effect="w:settle", description="settle", next=None)
    assert crash_points(replace(service(), steps=(hold, send, settle), consumers=())) == (
        "fence:after-effect:SendTransfer@send-transfer",
        "after:DynamoDB.TransactWriteItems@hold-funds",
        "after:DynamoDB.TransactWriteItems@settle",
    )
