"""A consumer's DLQ as the search judges it: a copy of an event the consumer applied, dead-lettered
without a reason, is a duplicate the consumer did not recognise (it failed on it until its
receives ran out) and pages a person for nothing; so is a copy its effect's put-once item refused
while its dedup record still stands. That is how a consumer's dedup switched off shows when its
effect is a put-once of its own (the wallet's audit, the template's journal): its state alone
tells nothing apart."""

from __future__ import annotations

import json

from chaos.cloud import chaos_cloud
from chaos.scenarios import place, verdict
from ops.stack_outputs import IDEMPOTENCY_TABLE_OUTPUT
from reliability.consumers import PUT_ONCE_REFUSED

QUEUE, DLQ = "NotifyQueueUrl", "NotifyDlqUrl"


def _dead_letter_a_copy(assembly, *, dedup_record=False, **attributes):
    """A completed order at rest, then a copy of the event its notify consumer applied in that
    consumer's DLQ (with `attributes`): the violations the search finds. notify's record rides on
    its own item; with `dedup_record`, the dedup table also holds one for the event, as it does for
    a consumer whose record lives there (the template's journal, the wallet's audit)."""
    with chaos_cloud(assembly) as cloud:
        placed = [place(cloud, "completed", "dead-letter-0")]
        cloud.rest()
        (body,) = cloud.delivered[QUEUE].values()
        cloud.sqs.send_message(QueueUrl=cloud.outputs[DLQ], MessageBody=body, **attributes)
        if dedup_record:
            token = json.loads(body)["event_id"]
            record = {"id": f"notify#{token}", "token": token, "step": "notify", "state": "COMPLETED"}
            cloud.dynamodb.put_item(
                TableName=cloud.outputs[IDEMPOTENCY_TABLE_OUTPUT],
                Item={k: {"S": v} for k, v in record.items()},
            )
        return placed[0].entity_id, verdict(cloud, placed).violations


def test_a_copy_of_an_applied_event_dead_lettered_without_a_reason_is_a_violation(assembly):
    entity_id, found = _dead_letter_a_copy(assembly)

    assert found == [
        f"{entity_id}: notify applied run 1's event and a copy of it was dead-lettered without a "
        "reason: a duplicate pages a person"
    ]


def test_a_copy_the_consumer_refused_with_a_reason_is_not_that_violation(assembly):
    # A refusal with its reason is the consumer's verdict on the event (`chaos.foreign` judges it)
    reason = {"reason": {"DataType": "String", "StringValue": "an event of stage 'elsewhere'"}}

    _, found = _dead_letter_a_copy(assembly, MessageAttributes=reason)

    assert found == []


REFUSED = {"reason": {"DataType": "String", "StringValue": f"{PUT_ONCE_REFUSED} (write 0); nothing applied"}}


def test_a_copy_its_put_once_refused_while_its_dedup_record_stands_is_a_violation(assembly):
    entity_id, found = _dead_letter_a_copy(assembly, dedup_record=True, MessageAttributes=REFUSED)

    assert found == [
        f"{entity_id}: notify applied run 1's event and dead-lettered a copy its dedup record still "
        "names (its put-once refused it): a duplicate pages a person"
    ]


def test_a_copy_its_put_once_refused_after_the_dedup_ttl_is_the_librarys_answer(assembly):
    _, found = _dead_letter_a_copy(assembly, dedup_record=False, MessageAttributes=REFUSED)

    assert found == []
