"""A consumer's DLQ as the search judges it: a copy of an event the consumer applied, dead-lettered
without a reason, is a duplicate the consumer did not recognise (it failed on it until its
receives ran out) and pages a person for nothing. That is how a consumer's dedup switched off shows
when its effect is a put-once of its own: the copy's write is refused, and the refusal crash-loops
(the wallet's audit, the template's journal); its state alone tells nothing apart."""

from __future__ import annotations

from chaos.cloud import chaos_cloud
from chaos.scenarios import place, verdict

QUEUE, DLQ = "NotifyQueueUrl", "NotifyDlqUrl"


def _dead_letter_a_copy(assembly, **attributes):
    """A completed order at rest, then a copy of the event its notify consumer applied in that
    consumer's DLQ (with `attributes`): the violations the search finds."""
    with chaos_cloud(assembly) as cloud:
        placed = [place(cloud, "completed", "dead-letter-0")]
        cloud.rest()
        (body,) = cloud.delivered[QUEUE].values()
        cloud.sqs.send_message(QueueUrl=cloud.outputs[DLQ], MessageBody=body, **attributes)
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
