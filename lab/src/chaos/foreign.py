"""Messages the app did not send itself, on its queues.

- `foreign-event`: an event on a consumer's queue from another producer, made from one the app
  itself delivered there (`InProcessCloud.delivered`): the same entity's fact under another event
  id (a hand-made redrive), another stage's event for the same entity, an event naming an entity
  that does not exist, or one without the entity's id at all (malformed).
  Oracle: each effect at most once (`ops.invariants`, which also refuses effects of an entity that
  does not exist), and each event a consumer cannot verify or parse is dead-lettered WITH a reason
  (`violations`), never applied, never crash-looped into the DLQ without one.
- `late-copy`: `make rerun` of a FAILED entity (run N+1), then a late copy of run N's message on
  the worker's queue (a straggling delivery). Oracle: a message for a run behind the entity's
  current one is provably a duplicate (run N+1 began only once run N had ended): it is never
  dead-lettered (no DLQ alarm pages a person for it).

The same holds on the consumers' queues, whatever sent the copy (`applied_and_dead_lettered`, every
world): a consumer's DLQ holds no copy of an event that consumer applied, without a reason, or
refused by its effect's put-once item (`reliability.consumers.PUT_ONCE_REFUSED`) while the
consumer's dedup record of it still stands. Its dedup off, a consumer whose effect is a put-once of
its own shows only there: the copy's put is refused and the state is the same. Once the record's
TTL has deleted it, that refusal is the library's answer to a copy redriven too late.

The event's envelope is the library's (`reliability.consumers`: `event_id`, `stage`); the field
that names the entity is the one whose value is the entity's id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ops.invariants import EntityRow, peek_dead_letters
from ops.service import service
from ops.stack_outputs import IDEMPOTENCY_TABLE_OUTPUT, dlq_output, queue_output, table_output
from reliability.consumers import PUT_ONCE_REFUSED
from reliability.run_store import record_key
from reliability.workflow_runs import RunMessage

if TYPE_CHECKING:
    from chaos.cloud import ChaosCloud
    from chaos.scenarios import Placed
    from chaos.schedules import Action

VARIANTS = ("other-id", "other-stage", "no-entity", "malformed")
POISON = frozenset({"other-stage", "no-entity", "malformed"})  # what a consumer must refuse
OTHER_STAGE = "elsewhere"


def unknown_id() -> str:
    """An entity id no key derives here (the entity's prefix, then zeros)."""
    return service().entity.id_prefix + "0" * 32


@dataclass(frozen=True)
class Sent:
    queue: str  # the queue's URL output
    variant: str
    body: str
    at: float  # when it was sent (the world's clock)


@dataclass
class ForeignLog:
    events: list[Sent] = field(default_factory=list)
    # (entity id, run) of each late copy, and the worker DLQ's letters already there when it was sent
    late_copies: list[tuple[str, int]] = field(default_factory=list)
    letters_before: set[str] = field(default_factory=set)


def _delivered(cloud: ChaosCloud, queue: str) -> list[dict[str, Any]]:
    """The events the app delivered on `queue` so far (JSON objects only)."""
    events = []
    for body in cloud.delivered.get(queue, {}).values():
        try:
            event = json.loads(body)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _subject(event: dict[str, Any], entity_id: str | None) -> str | None:
    """The field of `event` that names the entity (`entity_id`'s, or the one with its prefix)."""
    prefix = service().entity.id_prefix
    for name, value in event.items():
        if name in ("event_id", "stage") or not isinstance(value, str):
            continue
        if value == entity_id or (entity_id is None and value.startswith(prefix)):
            return name
    return None


def foreign_event(cloud: ChaosCloud, action: Action, placed: Sequence[Placed]) -> None:
    """Send the event `action.variant` names to `action.queue`, once the platform is at rest (it
    arrives from outside, later), made from one the app delivered there: about entity i when the
    app published its fact (a fact that happened), else about an entity that does not exist. No
    event delivered on that queue yet: nothing to imitate, nothing sent."""
    cloud.rest()
    entity_id = placed[action.entity % len(placed)].entity_id
    delivered = _delivered(cloud, action.queue)
    about = [e for e in delivered if entity_id is not None and _subject(e, entity_id) is not None]
    variant = action.variant
    if not about:
        variant = "no-entity" if variant in ("other-id", "other-stage") else variant
    if not (about or delivered):
        return
    model = (about or delivered)[0]
    subject = _subject(model, entity_id if about else None)
    if subject is None:
        return
    event: dict[str, Any] = dict(model)
    if variant == "other-id":
        event["event_id"] = f"{event.get('event_id')}-redriven-by-hand"
    elif variant == "other-stage":
        event["stage"] = OTHER_STAGE
        event["event_id"] = f"{event.get('event_id')}-{OTHER_STAGE}"
    elif variant == "no-entity":
        event[subject] = unknown_id()
        event["event_id"] = f"{event.get('event_id')}-unknown"
    elif variant == "malformed":
        del event[subject]
    body = json.dumps(event)
    cloud.sqs.send_message(QueueUrl=cloud.outputs[action.queue], MessageBody=body)
    cloud.foreign.events.append(Sent(action.queue, variant, body, cloud.clock()))


def _record(cloud: ChaosCloud, entity_id: str) -> dict[str, Any] | None:
    """The entity's record as stored (the harness's read)."""
    entity = service().entity
    item: dict[str, Any] | None = cloud.dynamodb.get_item(
        TableName=cloud.outputs[table_output(entity.table)],
        Key=record_key(entity, entity_id),
        ConsistentRead=True,
    ).get("Item")
    return item


def late_copy(cloud: ChaosCloud, action: Action, placed: Sequence[Placed]) -> None:
    """`make rerun` of entity i (the first FAILED-kind entity from i on), then run N's message again."""
    from chaos.scenarios import HAPPY  # noqa: PLC0415 - scenarios imports this module

    failing = [p for p in placed if p.kind != HAPPY and p.entity_id] or list(placed)
    entity_id = failing[action.entity % len(failing)].entity_id
    if entity_id is None:
        return
    cloud.rerun_entity(entity_id)
    record = _record(cloud, entity_id)
    if record is None or int(record["run"]["N"]) < 2:
        return
    run = int(record["run"]["N"]) - 1
    declared = service()
    dlq = cloud.outputs[dlq_output(declared.queue)]
    cloud.foreign.letters_before |= {d.message_id for d in peek_dead_letters(cloud.sqs, dlq, declared.queue)}
    message = RunMessage(entity_id=entity_id, run=run, idempotency_key=record["idempotency_key"]["S"])
    cloud.sqs.send_message(
        QueueUrl=cloud.outputs[queue_output(declared.queue)],
        MessageBody=json.dumps(message.body(declared.entity)),
    )
    cloud.foreign.late_copies.append((entity_id, run))


def _retention(cloud: ChaosCloud, dlq: str) -> int:
    attributes = cloud.sqs.get_queue_attributes(
        QueueUrl=cloud.outputs[dlq], AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    return int(attributes["MessageRetentionPeriod"])


def violations(cloud: ChaosCloud) -> list[str]:
    found = []
    letters = {
        queue: peek_dead_letters(cloud.sqs, cloud.outputs[dlq], queue) for dlq, queue in cloud.dlqs.items()
    }
    dlq_of = {queue: dlq for dlq, queue in cloud.dlqs.items()}
    for sent in cloud.foreign.events:
        if sent.variant not in POISON or cloud.clock() - sent.at >= _retention(cloud, dlq_of[sent.queue]):
            continue  # SQS deleted it: a DLQ keeps a message its retention period from its first send
        mine = [letter for letter in letters[sent.queue] if letter.body == sent.body]
        if not mine:
            found.append(
                f"{sent.queue}: a foreign event ({sent.variant}) was not dead-lettered: {sent.body[:120]}"
            )
        elif not all(letter.reason for letter in mine):
            found.append(f"{sent.queue}: a foreign event ({sent.variant}) was dead-lettered without a reason")
    copies = set(cloud.foreign.late_copies)
    for letter in letters.get(queue_output(service().queue), []):
        try:
            run = int(json.loads(letter.body).get("run", 0))
        except (ValueError, TypeError, AttributeError):
            continue
        if (letter.entity_id, run) in copies and letter.message_id not in cloud.foreign.letters_before:
            found.append(
                f"{letter.entity_id}: a late copy of run {run}'s message, behind the entity's rerun, was "
                f"dead-lettered ({letter.reason}): a provable duplicate pages a person"
            )
    return found


def applied_and_dead_lettered(cloud: ChaosCloud, rows: Sequence[EntityRow]) -> list[str]:
    """Each consumer's DLQ holds no copy of an event that consumer applied, of a run whose effect
    it applied: a letter with no reason (the consumer failed on it until its receives ran out), or
    one its put-once item refused while its dedup record still stands, is a duplicate it did not
    recognise, and pages a person for nothing."""
    by_id = {row.entity_id: row for row in rows}
    consumers = {queue_output(c.name): c.name for c in service().consumers}
    recorded = _dedup_records(cloud)
    found = []
    for dlq, queue in cloud.dlqs.items():
        name = consumers.get(queue)
        if name is None:
            continue
        for letter in peek_dead_letters(cloud.sqs, cloud.outputs[dlq], queue):
            event = _json_object(letter.body)
            row = next((by_id[v] for v in event.values() if isinstance(v, str) and v in by_id), None)
            if row is None or event.get("run", row.run) != row.run or not row.effects[name]:
                continue
            if not letter.reason:
                found.append(
                    f"{row.entity_id}: {name} applied run {row.run}'s event and a copy of it was "
                    "dead-lettered without a reason: a duplicate pages a person"
                )
            elif letter.reason.startswith(PUT_ONCE_REFUSED) and (name, event.get("event_id")) in recorded:
                found.append(
                    f"{row.entity_id}: {name} applied run {row.run}'s event and dead-lettered a copy "
                    "its dedup record still names (its put-once refused it): a duplicate pages a person"
                )
    return found


def _dedup_records(cloud: ChaosCloud) -> set[tuple[str, str]]:
    """(consumer, fact id) of every consumer dedup record the table holds (TTL may have deleted
    some): a record's step is its consumer, its token the fact's id."""
    consumers = {c.name for c in service().consumers}
    items = cloud.dynamodb.scan(TableName=cloud.outputs[IDEMPOTENCY_TABLE_OUTPUT]).get("Items", [])
    return {
        (item["step"]["S"], item["token"]["S"])
        for item in items
        if item.get("step", {}).get("S") in consumers and "token" in item
    }


def _json_object(body: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
