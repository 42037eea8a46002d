"""derive_key, execution_token and a fact's id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability.keys import (
    Fact,
    KeyParts,
    canonical_json,
    derive_key,
    execution_token,
    key_parts,
)


def test_short_identity_is_readable_and_scoped() -> None:
    key = derive_key("http", stage="dev", identity="abc", run=2)
    assert key.value == "http#dev#r2#v:abc"
    assert key.label == "abc"
    assert str(key) == key.value


def test_mappings_are_canonical() -> None:
    # Given the same mapping in two key orders, Then the same key
    one = derive_key("fence", stage="dev", identity={"token": "t", "step": "s"})
    two = derive_key("fence", stage="dev", identity={"step": "s", "token": "t"})
    assert one == two
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'


def test_every_dimension_separates_keys() -> None:
    base = derive_key("announce", stage="dev", identity="evt-1", run=1)
    assert base != derive_key("audit", stage="dev", identity="evt-1", run=1)
    assert base != derive_key("announce", stage="prod", identity="evt-1", run=1)
    assert base != derive_key("announce", stage="dev", identity="evt-1", run=2)
    assert base != derive_key("announce", stage="dev", identity="evt-2", run=1)


def test_long_identity_is_hashed_to_a_bounded_key_with_a_readable_label() -> None:
    # Given an identity far over the bound
    identity = "order-" + "x" * 5000
    key = derive_key("http", stage="dev", identity=identity)
    # Then the key is bounded, marked hashed, and the label keeps the readable start
    assert len(key.value.encode()) <= 256
    assert "#h:" in key.value
    assert key.label.startswith("order-xxx")
    assert derive_key("http", stage="dev", identity=identity + "y") != key


def test_a_readable_key_never_equals_a_hashed_one() -> None:
    long_key = derive_key("http", stage="dev", identity="z" * 1000)
    digest = long_key.value.split("#h:")[1]
    forged = derive_key("http", stage="dev", identity="h:" + digest)
    assert forged.value != long_key.value


@pytest.mark.parametrize(
    ("namespace", "stage", "identity", "run", "message"),
    [
        ("", "dev", "x", 1, r"^namespace must be 1-64 characters without '#' or whitespace, got ''$"),
        ("a#b", "dev", "x", 1, r"^namespace must be .*, got 'a#b'$"),
        ("n" * 65, "dev", "x", 1, r"^namespace must be 1-64"),
        ("ns", "d ev", "x", 1, r"^stage must be .*, got 'd ev'$"),
        ("ns", "dev", "", 1, r"^identity must not be empty$"),
        ("ns", "dev", "x", 0, r"^run starts at 1, got 0$"),
    ],
)
def test_invalid_inputs_are_rejected_naming_what_is_wrong(
    namespace: str, stage: str, identity: str, run: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        derive_key(namespace, stage=stage, identity=identity, run=run)


def test_a_64_character_namespace_is_accepted() -> None:
    assert derive_key("n" * 64, stage="dev", identity="x").value == "n" * 64 + "#dev#r1#v:x"


@settings(max_examples=200, derandomize=True)
@given(st.text(min_size=1, max_size=2000), st.integers(min_value=1, max_value=10_000))
def test_keys_are_always_bounded(identity: str, run: int) -> None:
    key = derive_key("consumer-name", stage="prod", identity=identity, run=run)
    assert len(key.value.encode()) <= 256


def test_execution_token_is_readable_when_it_can_be() -> None:
    assert execution_token(stage="dev", business_id="order-123", run=3) == "dev.order-123.r3"


@pytest.mark.parametrize("business_id", ["order/with:bad chars", "o" * 200, "o.1", "o 1"])
def test_execution_token_hashes_unsafe_or_long_ids(business_id: str) -> None:
    token = execution_token(stage="dev", business_id=business_id, run=1)
    assert len(token) <= 80
    assert token.startswith("dev.h-")
    assert token.endswith(".r1")
    assert token != execution_token(stage="dev", business_id=business_id + "x", run=1)


@pytest.mark.parametrize(
    ("stage", "business_id", "run", "message"),
    [
        ("d.v", "o", 1, r"^stage must not contain '\.'$"),
        ("d ev", "o", 1, r"^stage must be 1-64 characters"),
        ("dev", "", 1, r"^business_id must not be empty$"),
        ("dev", "o", 0, r"^run starts at 1, got 0$"),
    ],
)
def test_execution_token_rejects_bad_input_naming_what_is_wrong(
    stage: str, business_id: str, run: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        execution_token(stage=stage, business_id=business_id, run=run)


def test_an_execution_token_of_exactly_80_characters_stays_readable() -> None:
    # (80: a Step Functions execution name's limit; written out, so a changed bound fails here)
    business_id = "o" * (80 - len("dev..r1"))
    assert execution_token(stage="dev", business_id=business_id, run=1) == f"dev.{business_id}.r1"
    assert execution_token(stage="dev", business_id=business_id + "o", run=1).startswith("dev.h-")


def test_a_facts_id_names_its_kind_stage_run_and_subject_and_nothing_else() -> None:
    fact = Fact(kind="OrderCompleted", subject="o-1", run=2)
    assert fact.id(stage="dev") == "OrderCompleted#dev#r2#v:o-1"
    assert fact.id(stage="dev") == Fact("OrderCompleted", "o-1", 2).id(stage="dev")
    others = {
        Fact("OrderShipped", "o-1", 2).id(stage="dev"),
        Fact("OrderCompleted", "o-2", 2).id(stage="dev"),
        Fact("OrderCompleted", "o-1", 1).id(stage="dev"),
        fact.id(stage="prod"),
    }
    assert len(others) == 4
    assert fact.id(stage="dev") not in others


def test_the_stored_key_format_is_pinned_by_golden_values() -> None:
    """Records written by one version are read by the next: the format may not drift silently."""
    assert (
        derive_key("fence", stage="dev", identity={"token": "dev.t-1.r2", "step": "Debit"}, run=2).value
        == 'fence#dev#r2#v:{"step":"Debit","token":"dev.t-1.r2"}'
    )
    hashed = derive_key("http", stage="prod", identity="x" * 300, run=3)
    assert hashed.value == "http#prod#r3#h:59c4368d5f0d34d5b7a4733472d392f88f17f3a995010817a3b294885cdd9c30"
    assert hashed.label == "x" * 95 + "…"
    assert Fact("TransferDone", "t-1", 2).id(stage="dev") == "TransferDone#dev#r2#v:t-1"
    assert execution_token(stage="dev", business_id="t-1", run=2) == "dev.t-1.r2"
    assert (
        execution_token(stage="dev", business_id="a b/c", run=1)
        == "dev.h-539138d518391ec4fc557ce35c37ead28f89fbf8.r1"
    )
    assert (
        execution_token(stage="dev", business_id="t" * 80, run=1)
        == "dev.h-35be239b5504323893a1b8ce2d8c10ece5a85361.r1"
    )


def test_a_key_exactly_at_the_bound_stays_readable_and_one_byte_over_is_hashed() -> None:
    # (the documented bounds, written out: a key of 256 bytes, a label of 96 characters)
    prefix = len("http#dev#r1#v:")
    at_bound = derive_key("http", stage="dev", identity="a" * (256 - prefix))
    assert at_bound.value == "http#dev#r1#v:" + "a" * (256 - prefix)
    over = derive_key("http", stage="dev", identity="a" * (256 - prefix + 1))
    assert over.value.startswith("http#dev#r1#h:")
    label_at_bound = derive_key("http", stage="dev", identity="b" * 96).label
    assert label_at_bound == "b" * 96


@pytest.mark.parametrize(
    ("value", "parts"),
    [
        (derive_key("ns", stage="dev", identity="o-1", run=2).value, KeyParts(run=2, business_id="o-1")),
        (derive_key("ns", stage="dev", identity={"a": 1}).value, KeyParts(run=1, business_id=None)),
        (derive_key("ns", stage="dev", identity='["o-1"]').value, KeyParts(run=1, business_id=None)),
        (derive_key("ns", stage="dev", identity="x" * 300, run=4).value, KeyParts(run=4, business_id=None)),
        (execution_token(stage="dev", business_id="o-7", run=3), KeyParts(run=3, business_id="o-7")),
        (execution_token(stage="dev", business_id="x" * 90, run=5), KeyParts(run=5, business_id=None)),
        (execution_token(stage="dev", business_id="H-1", run=1), KeyParts(run=1, business_id="H-1")),
        ("not a key", None),
    ],
)
def test_a_key_or_token_says_its_run_and_its_business_id_only_when_readable(
    value: str, parts: KeyParts | None
) -> None:
    # a JSON identity (object or array) or a hashed one names no business id: telemetry would
    # otherwise print a fragment of a request body or a digest as the entity
    assert key_parts(value) == parts


def test_canonical_json_writes_non_ascii_text_as_itself() -> None:
    # a key derived from an identity must not change with an encoder setting: the stored text
    # of a non-ASCII identity is the character itself, never a \u escape
    assert canonical_json({"name": "café", "a": [1]}) == '{"a":[1],"name":"café"}'
