"""The control: the same harness with fences, HTTP idempotency and dedup switched off (by injecting
`unfenced_runtime`) must be caught. A harness that cannot fail proves nothing."""

from __future__ import annotations

import pytest

from chaos.interleave import Pair, explore
from chaos.points import PointHit
from chaos.report import classify
from chaos.single import run_single

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("charge-payment:after:DynamoDB.PutItem#2", "double ChargePayment"),
        ("notify:after:DynamoDB.TransactWriteItems#1", "double notify"),
        ("analytics:after:DynamoDB.TransactWriteItems#1", "double analytics"),
    ],
)
def test_without_guards_one_crash_duplicates_an_effect_and_the_checker_sees_it(assembly, label, expected):
    # Given a crash after the effect (test_single: with the guards on, nothing to see)
    hit = PointHit.parse(label)
    # When the guards are off, the retry repeats the effect
    control = run_single(assembly, "completed", hit, control=True)
    assert control.fired == [label]
    assert expected in {classify(v) for v in control.violations}, control.violations


def test_without_fences_a_zombie_charges_twice(assembly):
    result = explore(assembly, Pair("ChargePayment", late=True), control=True, limit=1)
    assert any(classify(v) == "double ChargePayment" for v in result.violations), result.violations
