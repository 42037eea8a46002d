"""The simulator's speed patches of moto (lab/src/simulator/patches.py 6-8) change no answer: the same
DynamoDB calls give the same responses and errors with and without them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from simulator.clock import Clock
from simulator.patches import on_the_clock

KEY = {"pk": {"S": "a"}, "sk": {"S": "b"}}
ITEM = {
    **KEY,
    "n": {"N": "1.50"},
    "l": {"L": [{"S": "x"}, {"M": {"q": {"BOOL": True}}}]},
    "ss": {"SS": ["a", "b"]},
    "nul": {"NULL": True},
    "bin": {"B": b"\x00\x01"},
}


def _calls(d: Any) -> list[Callable[[], Any]]:
    t = "t"
    return [
        lambda: d.put_item(TableName=t, Item=ITEM),
        lambda: d.put_item(TableName=t, Item={**ITEM, "n": {"N": "2"}}, ReturnValues="ALL_OLD"),
        lambda: d.get_item(TableName=t, Key=KEY, ConsistentRead=True),
        lambda: d.update_item(
            TableName=t,
            Key=KEY,
            UpdateExpression="SET n = n + :one, m = :one ADD c :one REMOVE nul",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        ),
        lambda: d.update_item(
            TableName=t,
            Key=KEY,
            UpdateExpression="SET a1 = :one SET a2 = :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        ),
        lambda: d.put_item(TableName=t, Item={"pk": {"S": "a"}, "sk": {"S": "c"}, "s": {"S": "text"}}),
        lambda: d.query(
            TableName=t,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "a"}},
            Limit=1,
        ),
        lambda: d.scan(TableName=t, ProjectionExpression="pk, sk, s"),
        lambda: d.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": t, "Item": {"pk": {"S": "c"}, "sk": {"S": "d"}}}},
                {
                    "ConditionCheck": {
                        "TableName": t,
                        "Key": KEY,
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            ]
        ),
        # the cancelled transaction left no trace: its Put is undone, the checked item unchanged
        lambda: d.get_item(TableName=t, Key={"pk": {"S": "c"}, "sk": {"S": "d"}}, ConsistentRead=True),
        lambda: d.get_item(TableName=t, Key=KEY, ConsistentRead=True),
        lambda: d.put_item(
            TableName=t,
            Item=ITEM,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: d.delete_item(TableName=t, Key={"pk": {"S": "a"}, "sk": {"S": "c"}}, ReturnValues="ALL_OLD"),
        lambda: d.batch_write_item(
            RequestItems={t: [{"PutRequest": {"Item": {"pk": {"S": "e"}, "sk": {"S": "f"}}}}]}
        ),
        lambda: d.query(
            TableName=t,
            KeyConditionExpression="pk = :p AND sk > :s",
            ExpressionAttributeValues={":p": {"S": "a"}, ":s": {"S": "a"}},
            ScanIndexForward=False,
        ),
        lambda: d.query(
            TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "e"}}
        ),
        lambda: d.query(
            TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "none"}}
        ),
        lambda: d.describe_table(TableName=t)["Table"]["KeySchema"],
    ]


def _answers(patched: bool) -> list[Any]:
    answers = []
    with mock_aws():
        d = boto3.client("dynamodb", region_name="us-east-1")
        d.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        with on_the_clock(Clock()) if patched else mock_aws():
            for call in _calls(d):
                try:
                    answer = call()
                except d.exceptions.ClientError as error:
                    answer = (
                        error.response["Error"],
                        error.response.get("Item"),
                        error.response.get("CancellationReasons"),
                    )
                if isinstance(answer, dict):
                    answer.pop("ResponseMetadata", None)
                answers.append(answer)
    return answers


def test_dynamodb_answers_are_the_same_with_the_speed_patches() -> None:
    plain, patched = _answers(patched=False), _answers(patched=True)
    assert patched == plain
    assert "SET" in str(plain[4])  # the twice-used SET section is still refused
    assert "TransactionCanceledException" in str(plain[8])
    assert "Item" not in plain[9]
    assert [i["pk"]["S"] for i in plain[15]["Items"]] == ["e"]
    assert plain[16]["Items"] == []


def test_a_transaction_sent_again_with_its_client_token_runs_once_as_on_dynamodb() -> None:
    # Given a transaction that adds 1 to a counter, sent with a ClientRequestToken
    clock = Clock()
    add = {"Update": {"TableName": "t", "Key": KEY, "UpdateExpression": "ADD c :one"}}
    add["Update"]["ExpressionAttributeValues"] = {":one": {"N": "1"}}
    with mock_aws(), on_the_clock(clock):
        d = boto3.client("dynamodb", region_name="us-east-1")
        d.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )

        def counter() -> str:
            return str(d.get_item(TableName="t", Key=KEY, ConsistentRead=True)["Item"]["c"]["N"])

        # When it is sent again with the same token (the SDK's resend after a lost answer)
        d.transact_write_items(TransactItems=[add], ClientRequestToken="token-1")
        d.transact_write_items(TransactItems=[add], ClientRequestToken="token-1")
        # Then it ran once; with other items under that token it is refused
        assert counter() == "1"
        other = {"Update": {**add["Update"], "UpdateExpression": "ADD d :one"}}
        with pytest.raises(ClientError, match="IdempotentParameterMismatchException"):
            d.transact_write_items(TransactItems=[other], ClientRequestToken="token-1")
        # and 10 minutes later the token is forgotten: the same request runs again
        clock.advance(601)
        d.transact_write_items(TransactItems=[add], ClientRequestToken="token-1")
        assert counter() == "2"
