"""`reliability.attribute_values`: plain values to DynamoDB attribute values and back, as boto3's
serializer writes them (numbers come back as int), and the time an item records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from reliability.attribute_values import attribute_value, from_item, now_iso, to_item


def test_each_plain_type_has_its_attribute_value() -> None:
    assert attribute_value(None) == {"NULL": True}
    assert attribute_value(True) == {"BOOL": True}
    assert attribute_value(0) == {"N": "0"}
    assert attribute_value(Decimal("12")) == {"N": "12"}
    assert attribute_value("a") == {"S": "a"}
    assert attribute_value([1, "b"]) == {"L": [{"N": "1"}, {"S": "b"}]}
    assert attribute_value(("x",)) == {"L": [{"S": "x"}]}
    assert attribute_value({"k": {"n": 2}}) == {"M": {"k": {"M": {"n": {"N": "2"}}}}}


def test_a_float_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match=r"^no DynamoDB attribute value for float: 1\.5$"):
        attribute_value(1.5)


def test_an_item_leaves_out_none_and_comes_back_with_int_numbers_at_every_depth() -> None:
    values = {"id": "o-1", "qty": 3, "gone": None, "lines": [{"qty": 2}, 5], "by": {"n": 7}, "ok": False}
    item = to_item(values)

    assert "gone" not in item
    back = from_item(item)
    assert back == {"id": "o-1", "qty": 3, "lines": [{"qty": 2}, 5], "by": {"n": 7}, "ok": False}
    numbers = [back["qty"], back["lines"][0]["qty"], back["lines"][1], back["by"]["n"]]
    assert [type(n) for n in numbers] == [int, int, int, int]  # not Decimal
    assert type(back["ok"]) is bool


def test_the_recorded_time_is_utc() -> None:
    recorded = datetime.fromisoformat(now_iso())

    assert recorded.utcoffset() == timedelta(0)
    assert abs(recorded - datetime.now(UTC)) < timedelta(seconds=5)
