"""The SQS queue adapter: one JSON message per send, its keys sorted, its id answered; a throttle is
the one retryable `TransientError`, a refusal propagates as it is."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from reliability.errors import TransientError
from reliability.sqs import SqsQueue
from reliability_helpers import REGION

BODY = {"visit_id": "v-1", "run": 2, "idempotency_key": "key-1"}
SORTED_BODY = '{"idempotency_key": "key-1", "run": 2, "visit_id": "v-1"}'
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/retrysafe-test-runs"


def test_a_send_is_one_message_whose_body_is_the_sorted_json_and_answers_its_id(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="runs")["QueueUrl"]
    sqs.create_queue(QueueName="other")

    message_id = SqsQueue(client=sqs, queue_url=url).send(BODY)

    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert (message["MessageId"], message["Body"]) == (message_id, SORTED_BODY)


def test_a_send_is_the_request_sqs_is_asked_for() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    with Stubber(sqs) as stubber:
        stubber.add_response(
            "send_message",
            {"MessageId": "m-7", "MD5OfMessageBody": "0" * 32},
            {"QueueUrl": URL, "MessageBody": SORTED_BODY},
        )
        assert SqsQueue(client=sqs, queue_url=URL).send(BODY) == "m-7"
        stubber.assert_no_pending_responses()


def test_a_throttled_send_is_a_transient_error_naming_the_call() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    with Stubber(sqs) as stubber:
        stubber.add_client_error("send_message", "ThrottlingException")
        with pytest.raises(TransientError) as throttled:
            SqsQueue(client=sqs, queue_url=URL).send(BODY)
    assert str(throttled.value) == "send message: ThrottlingException"


def test_a_refused_send_propagates_as_it_is() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    with Stubber(sqs) as stubber:
        stubber.add_client_error("send_message", "AWS.SimpleQueueService.NonExistentQueue")
        with pytest.raises(ClientError) as refused:
            SqsQueue(client=sqs, queue_url=URL).send(BODY)
    assert not isinstance(refused.value, TransientError)
    assert refused.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
