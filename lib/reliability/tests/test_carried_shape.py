"""The shapes behind a record carried on a business item: which write carries it (RecordOn.mark)
and a carried Put rewritten as the Update that sets the same attributes (put_as_update)."""

from __future__ import annotations

from typing import Any

import pytest

from reliability import RecordOn, Write
from reliability.requests import put_as_update
from reliability_demo import DemoOutOfStock

TABLE = "items"
KEY = {"pk": {"S": "t-1"}, "sk": {"S": "debit"}}
ON = RecordOn(table=TABLE, key=KEY)


def update(key: dict[str, Any], table: str = TABLE) -> dict[str, Any]:
    return {"Update": {"TableName": table, "Key": key, "UpdateExpression": "SET #a = :a"}}


def put(key: dict[str, Any], **attributes: Any) -> dict[str, Any]:
    return {"Put": {"TableName": TABLE, "Item": {**key, **attributes}}}


def test_the_update_of_the_named_item_carries_the_record_and_no_other_write_does() -> None:
    # Given an effect that writes the item, another item of its table and the same key elsewhere
    other = {"pk": {"S": "t-1"}, "sk": {"S": "credit"}}
    writes = [Write(update(other)), Write(update(KEY)), Write(update(KEY, table="elsewhere"))]
    # Then the one write of the named item is marked, and only it
    assert [write.carries_record for write in ON.mark(writes)] == [False, True, False]


def test_a_put_of_the_named_item_carries_the_record() -> None:
    marked = ON.mark([Write(put(KEY, amount={"N": "5"}))])
    assert [write.carries_record for write in marked] == [True]


def test_a_delete_of_the_item_is_not_the_write_that_carries_it() -> None:
    delete = {"Delete": {"TableName": TABLE, "Key": KEY}}
    assert [w.carries_record for w in ON.mark([Write(delete), Write(update(KEY))])] == [False, True]


@pytest.mark.parametrize(
    ("writes", "message"),
    [
        (
            [Write(update(KEY), carries_record=True)],
            r"^a step whose record is on a business item marks no write itself$",
        ),
        (
            [Write(update(KEY)), Write(put(KEY))],
            r"^the effect writes the item \{'pk': \{'S': 't-1'\}, 'sk': \{'S': 'debit'\}\} of items 2 times; "
            r"the item that carries the step's record must be written exactly once$",
        ),
        ([], r" of items 0 times; "),
        (
            [Write(update(KEY), DemoOutOfStock("x"))],
            r"^the write that carries the record has no BusinessError and is not optional$",
        ),
        (
            [Write(update(KEY), optional=True)],
            r"^the write that carries the record has no BusinessError and is not optional$",
        ),
    ],
)
def test_an_effect_that_disagrees_with_its_entry_is_refused_saying_how(
    writes: list[Write], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        ON.mark(writes)


def test_a_put_becomes_the_update_of_the_attributes_the_record_does_not_set() -> None:
    item = put(KEY, amount={"N": "5"}, state={"S": "COMPLETED"})["Put"]
    assert put_as_update(item, ["pk", "sk"], {"state": {"S": "COMPLETED"}}) == {
        "TableName": TABLE,
        "Key": KEY,
        "UpdateExpression": "SET #p0 = :p0",
        "ExpressionAttributeNames": {"#p0": "amount"},
        "ExpressionAttributeValues": {":p0": {"N": "5"}},
    }


def test_a_put_of_nothing_but_the_key_updates_nothing() -> None:
    assert put_as_update(put(KEY)["Put"], ["pk", "sk"], {})["UpdateExpression"] == ""


def test_a_put_conditioned_on_the_items_absence_is_accepted() -> None:
    item = {**put(KEY, amount={"N": "5"})["Put"], "ConditionExpression": "attribute_not_exists(pk)"}
    assert put_as_update(item, ["pk", "sk"], {})["ExpressionAttributeNames"] == {"#p0": "amount"}


def test_a_put_with_another_condition_cannot_carry_the_record() -> None:
    item = {**put(KEY)["Put"], "ConditionExpression": "amount > :zero"}
    with pytest.raises(
        TypeError,
        match=r"^a Put that carries the record has no condition but the item's absence: amount > :zero$",
    ):
        put_as_update(item, ["pk", "sk"], {})


def test_an_attribute_the_record_sets_differently_is_refused() -> None:
    item = put(KEY, state={"S": "NEW"})["Put"]
    with pytest.raises(TypeError, match=r"^the item's \['state'\] would be overwritten by its record's$"):
        put_as_update(item, ["pk", "sk"], {"state": {"S": "COMPLETED"}})


def test_a_put_of_several_attributes_sets_each_of_them() -> None:
    item = put(KEY, amount={"N": "5"}, currency={"S": "EUR"})["Put"]
    update = put_as_update(item, ["pk", "sk"], {})
    assert update["UpdateExpression"] == "SET #p0 = :p0, #p1 = :p1"
    assert update["ExpressionAttributeNames"] == {"#p0": "amount", "#p1": "currency"}
