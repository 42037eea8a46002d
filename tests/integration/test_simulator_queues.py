"""SQS as simulated time passes: retention on queues and DLQs, and the event source mapping's
redelivery of a batch its throttled function never ran (receive counts grow, then the DLQ)."""

from __future__ import annotations

import json

from simulator.cloud import InProcessCloud

DAY = 86_400
ORDER = {"customer_id": "customer-12", "currency": "EUR", "items": [{"sku": "sku-3", "quantity": 1}]}


def _ids(cloud: InProcessCloud, queue_output: str) -> set[str]:
    return {m["message_id"] for m in cloud.messages(queue_output)}


def _retention_days(cloud: InProcessCloud, queue_output: str) -> float:
    attributes = cloud.sqs.get_queue_attributes(
        QueueUrl=cloud.outputs[queue_output], AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    return int(attributes["MessageRetentionPeriod"]) / DAY


def test_a_message_vanishes_once_older_than_its_queues_retention(cloud: InProcessCloud) -> None:
    # Given the template's retentions (queue 4 days, DLQ 14), a message on each
    assert (_retention_days(cloud, "NotifyQueueUrl"), _retention_days(cloud, "NotifyDlqUrl")) == (4, 14)
    queued = cloud.send("NotifyQueueUrl", {"event_id": "x"})
    dead = cloud.send("NotifyDlqUrl", {"event_id": "y"})

    # When just under 4 days pass with the queue's poller off, both stay
    cloud.advance(4 * DAY - 60, pollers_off=True)
    assert (_ids(cloud, "NotifyQueueUrl"), _ids(cloud, "NotifyDlqUrl")) == ({queued}, {dead})

    # Then past 4 days the queue's message is gone; the DLQ's stays until its 14 days
    cloud.advance(120, pollers_off=True)
    assert _ids(cloud, "NotifyQueueUrl") == set()
    cloud.advance(10 * DAY - 120)
    assert _ids(cloud, "NotifyDlqUrl") == {dead}
    cloud.advance(120)
    assert _ids(cloud, "NotifyDlqUrl") == set()
    assert cloud.expired_messages == 2


def test_throttled_polls_raise_the_receive_count_until_the_dlq_takes_the_batch(cloud: InProcessCloud) -> None:
    # Given an order's message on the orders queue (maxReceiveCount 10 in the template)
    response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "throttled-1"})
    assert response.status == 202
    policy = json.loads(
        cloud.sqs.get_queue_attributes(
            QueueUrl=cloud.outputs["OrdersQueueUrl"], AttributeNames=["RedrivePolicy"]
        )["Attributes"]["RedrivePolicy"]
    )
    max_receives = int(policy["maxReceiveCount"])

    # When the worker is throttled at every poll: each receive counts, nothing runs
    polls = [cloud.throttled_poll("OrdersQueueUrl") for _ in range(max_receives)]
    assert [p.receive_counts for p in polls] == [(n,) for n in range(1, max_receives + 1)]
    assert not cloud.executions()

    # Then the next receive moves it to the DLQ, with its receive count, and the worker never ran
    assert cloud.throttled_poll("OrdersQueueUrl").message_ids == ()
    (dead,) = cloud.messages("OrdersDlqUrl")
    assert json.loads(dead["body"])["order_id"] == response.body["order_id"]
    assert not [i for i in cloud.invocations if i.function == cloud.function("Worker")]


def test_a_dlq_message_keeps_its_first_send_time(cloud: InProcessCloud) -> None:
    # Given a message that reaches the DLQ 3 days after it was sent to the queue
    cloud.send("OrdersQueueUrl", {"order_id": "o-late"})
    cloud.advance(3 * DAY)
    for _ in range(11):
        cloud.throttled_poll("OrdersQueueUrl")
    assert len(cloud.messages("OrdersDlqUrl")) == 1

    # When 11 more days pass (14 since the first send, 11 since the move)
    cloud.advance(11 * DAY)

    # Then it is gone: SQS counts a standard queue's message's retention from its first enqueue
    assert cloud.messages("OrdersDlqUrl") == []


def test_an_order_whose_message_expired_is_resent_by_the_scheduled_sweep(cloud: InProcessCloud) -> None:
    # Given an accepted order whose message nobody consumes
    response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "expired-1"})
    assert response.status == 202

    # When 5 days pass with the worker's poller off: the message outlives the queue's 4-day retention
    cloud.advance(5 * DAY, pollers_off=True)

    # Then it vanished, and the sweep-accepted schedule (every 5 minutes) sent the order's message again
    assert cloud.expired_messages == 1
    (message,) = cloud.messages("OrdersQueueUrl")
    assert json.loads(message["body"])["order_id"] == response.body["order_id"]
    cloud.settle()
    assert cloud.api("GET", f"/orders/{response.body['order_id']}").body["status"] == "COMPLETED"


def test_a_message_received_after_a_day_jump_can_be_made_visible_again(cloud: InProcessCloud) -> None:
    # Given a message sent, then a simulated day later received (SQS's 12-hour visibility limit
    # counts from that receive, not from the send)
    cloud.send("NotifyQueueUrl", {"event_id": "late"})
    cloud.advance(DAY)
    messages, _ = cloud.receive_batch("NotifyQueueUrl")

    # When the consumer gives it back at once, then it is visible again
    cloud.sqs.change_message_visibility(
        QueueUrl=cloud.outputs["NotifyQueueUrl"],
        ReceiptHandle=messages[0]["ReceiptHandle"],
        VisibilityTimeout=0,
    )
    assert [m["message_id"] for m in cloud.messages("NotifyQueueUrl")] == [messages[0]["MessageId"]]


def test_a_polled_queue_keeps_its_messages_in_a_jump_with_the_pollers_on(cloud: InProcessCloud) -> None:
    # Given a message on a queue an event source mapping polls (on AWS it would be received within
    # seconds, so it never waits out the retention)
    queued = cloud.send("NotifyQueueUrl", {"event_id": "z"})

    # When 5 days pass with the pollers running, it is left to the schedule's own deliveries
    cloud.advance(5 * DAY)
    assert _ids(cloud, "NotifyQueueUrl") == {queued}
    assert cloud.expired_messages == 0
