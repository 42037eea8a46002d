"""A conditional write's own token: the SDK's resend of a write that landed is recognised as the
call's own, never as another caller's write."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from reliability import CallToken, with_attempt
from reliability.calltoken import ATTEMPT_ATTRIBUTE
from reliability_helpers import FENCES, REGION, create_tables, lose_answer

KEY = {"id": {"S": "order#o-1"}}


def put_new(client: Any, token: CallToken, *, own_resend_passes: bool) -> dict[str, Any]:
    """A Put of a new item carrying ``token``; its condition lets its own resend through or not."""
    condition = "attribute_not_exists(id)"
    return dict(
        client.put_item(
            TableName=FENCES,
            Item={**KEY, ATTEMPT_ATTRIBUTE: token.item_value},
            ConditionExpression=with_attempt(condition) if own_resend_passes else condition,
            ExpressionAttributeNames=token.names if own_resend_passes else {},
            **({"ExpressionAttributeValues": token.values} if own_resend_passes else {}),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    )


@pytest.fixture
def client(aws: None) -> Any:
    made = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"mode": "standard"}))
    create_tables(made)
    return made


def test_a_resend_of_a_landed_write_passes_its_own_condition(client: Any) -> None:
    # Given the first attempt of a Put lands and its answer is lost, so the SDK sends it again
    attempts = lose_answer(client, "PutItem")
    # When the write's condition also passes on the item this very call wrote
    put_new(client, CallToken(), own_resend_passes=True)
    # Then the resend succeeds: the caller sees its own write, not a conflict
    assert len(attempts) == 2


def test_another_calls_write_still_fails_the_condition(client: Any) -> None:
    put_new(client, CallToken(), own_resend_passes=True)
    with pytest.raises(ClientError) as refused:
        put_new(client, CallToken(), own_resend_passes=True)
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


def test_a_refused_write_tells_its_own_landed_write_from_anothers(client: Any) -> None:
    # Given a Put whose condition does not let its resend through, and whose answer is lost
    token = CallToken()
    lose_answer(client, "PutItem")
    with pytest.raises(ClientError) as refused:
        put_new(client, token, own_resend_passes=False)
    # Then the refusal's ALL_OLD item is recognised as this call's write, and only this call's
    old = refused.value.response["Item"]
    assert token.wrote(old) is True
    assert CallToken().wrote(old) is False
    assert token.wrote(None) is False
    assert token.wrote({"id": KEY["id"]}) is False


def test_each_call_has_a_token_of_its_own() -> None:
    assert CallToken().value != CallToken().value
    token = CallToken("t-1")
    assert (token.item_value, token.names, token.values) == (
        {"S": "t-1"},
        {"#attempt": "attempt"},
        {":attempt": {"S": "t-1"}},
    )
    assert with_attempt("attribute_not_exists(id)") == "(attribute_not_exists(id)) OR #attempt = :attempt"
    assert CallToken.SET == "#attempt = :attempt"
