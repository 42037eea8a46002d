"""schemathesis's business-rule check: a 422 to an order the document admits holds one named rule."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from ops.fuzz.schemathesis_rules import business_rule_refusals

ORDER = {"customer_id": "c", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]}
OTHER_ORDER = {**ORDER, "items": [{"sku": "sku-2", "quantity": 1}]}


def _case(body: Any, *, key: str = "k-1", positive: bool = True) -> Any:
    mode = SimpleNamespace(is_positive=positive)
    return SimpleNamespace(
        method="POST",
        path="/orders",
        body=body,
        headers={"Idempotency-Key": key},
        meta=SimpleNamespace(generation=SimpleNamespace(mode=mode)),
    )


def _answer(status: int, code: str | None = None) -> Any:
    body = {"error": code, "message": "m"} if code else {"order_id": "o-1"}
    return SimpleNamespace(status_code=status, content=json.dumps(body).encode())


def _judge(
    check: business_rule_refusals, body: Any, status: int, code: str | None = None, **case: Any
) -> None:
    check.after_response(None, _answer(status, code), _case(body, **case))


def test_an_unknown_sku_is_a_right_422_and_a_catalog_one_is_not():
    check = business_rule_refusals()
    _judge(check, {**ORDER, "items": [{"sku": "sku-404", "quantity": 1}]}, 422, "UnknownSku")
    with pytest.raises(AssertionError, match="catalog skus only"):
        _judge(check, ORDER, 422, "UnknownSku")


def test_a_repeated_sku_is_a_right_422_only_when_it_is_the_whole_fault():
    check = business_rule_refusals()
    repeated = {**ORDER, "items": [{"sku": "a", "quantity": 1}, {"sku": "a", "quantity": 2}]}
    _judge(check, repeated, 422, "InvalidRequest")
    with pytest.raises(AssertionError, match="no sku repeated"):
        _judge(check, ORDER, 422, "InvalidRequest")
    with pytest.raises(AssertionError, match="no sku repeated"):  # and a currency outside the contract
        _judge(check, {**repeated, "currency": "eur"}, 422, "InvalidRequest")


def test_a_reused_key_is_a_right_422_for_another_order_not_for_its_own():
    check = business_rule_refusals()
    _judge(check, {**ORDER, "items": [{"sku": "sku-1", "quantity": 1.0}]}, 202)
    _judge(check, OTHER_ORDER, 422, "IdempotencyKeyReused")
    _judge(check, ORDER, 422, "IdempotencyKeyReused", key="k-of-an-earlier-run")
    with pytest.raises(AssertionError, match="was accepted for"):  # 1.0 and 1 are one order
        _judge(check, ORDER, 422, "IdempotencyKeyReused")


def test_no_other_422_is_right_for_an_order_within_the_document():
    check = business_rule_refusals()
    with pytest.raises(AssertionError, match="no business rule"):
        _judge(check, ORDER, 422, "OrderConflict")
    with pytest.raises(AssertionError, match="contract refuses"):
        _judge(check, {**ORDER, "currency": "eur"}, 422, "UnknownSku")


def test_only_documented_orders_are_judged():
    check = business_rule_refusals()
    _judge(check, ORDER, 422, "OrderConflict", positive=False)  # outside the document: any 4xx
    _judge(check, ORDER, 400, "InvalidRequest")  # not a 422: schemathesis's own check judges it
