"""The entity table's run state, on DynamoDB (implements `reliability.workflow_runs.RunStore`).

The entity lives at `<name>#<id>` / `<name>` (`Entity.partition`, sort key the entity's name) with
its run attributes beside the service's own: `status`, `run`, `execution_arn`, `created_at`
(ISO 8601, UTC), `idempotency_key`, and `accepted_at`/`finished_at` as the run moves. The service
gives how to write its record as attributes and read it back (`encode`, `decode`); whether a
record already stored under an id is the same business entity is its own rule.

An operator's tool needs no service's codec: `run_records` reads and moves any service's entities
through these run attributes alone (`RunRecord`), and never creates one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from botocore.exceptions import ClientError

from reliability.attribute_values import CONDITION_FAILED, from_item, now_iso, to_item
from reliability.calltoken import CallToken
from reliability.declaration import Entity
from reliability.effects import Write
from reliability.errors import RerunRefused, error_code, transient_errors
from reliability.workflow_runs import RunStatus

T = TypeVar("T")


def record_key(entity: Entity, entity_id: str) -> dict[str, Any]:
    """The key of the entity's record on its table (what a tool reads it by, too)."""
    return {"pk": {"S": entity.partition(entity_id)}, "sk": {"S": entity.name}}


class DynamoRunStore(Generic[T]):
    """The entity's record on its table: created once, read, and its runs' transitions."""

    def __init__(
        self,
        *,
        client: Any,
        table_name: str,
        entity: Entity,
        encode: Callable[[T], Mapping[str, Any]],
        decode: Callable[[Mapping[str, Any]], T],
    ) -> None:
        """`encode`: the record's attributes (its id under `Entity.id_field`, no keys); `decode`:
        the record from an item's plain values."""
        self._client = client
        self._table = table_name
        self._entity = entity
        self._encode = encode
        self._decode = decode

    def key(self, entity_id: str) -> dict[str, Any]:
        return record_key(self._entity, entity_id)

    def create(self, record: T) -> T:
        """Store `record` unless its id is taken: then the record stored under it is returned (a
        client's retry; the service tells whether it is the same business entity)."""
        values = self._encode(record)
        item = {
            "pk": self._entity.partition(values[self._entity.id_field]),
            "sk": self._entity.name,
            **values,
        }
        try:
            with transient_errors(f"create {self._entity.name}"):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(item),
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            return self._decode(from_item(error.response.get("Item", {})))
        return record

    def get(self, entity_id: str) -> T | None:
        with transient_errors(f"get {self._entity.name}"):
            item = self._client.get_item(
                TableName=self._table, Key=self.key(entity_id), ConsistentRead=True
            ).get("Item")
        return self._decode(from_item(item)) if item else None

    def accepted_before(self, created_before: str) -> list[T]:
        # A paginated Scan with a filter: it reads the whole table on every sweep, which is fine
        # for a template's volumes. Next step at scale: a sparse GSI (an attribute present only
        # while ACCEPTED, sorted by time) so the sweep is a Query.
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "sk = :entity AND #status = :accepted AND created_at < :before",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":entity": {"S": self._entity.name},
                ":accepted": {"S": RunStatus.ACCEPTED.value},
                ":before": {"S": created_before},
            },
            "ConsistentRead": True,
        }
        found: list[T] = []
        while True:
            with transient_errors(f"scan accepted {self._entity.name}s"):
                page = self._client.scan(**kwargs)
            found.extend(self._decode(from_item(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def mark_running(self, entity_id: str, *, run: int, execution_arn: str | None) -> None:
        """RUNNING (+ execution ARN) for the current run; never moves a finished entity back (the
        saga may be quicker than this write: then only the ARN is recorded), never touches another
        run. Without an ARN (an Express run, marked before it starts) only the status."""
        values: dict[str, Any] = {
            ":running": RunStatus.RUNNING.value,
            ":accepted": RunStatus.ACCEPTED.value,
            ":run": run,
        }
        update = "SET #s = :running"
        if execution_arn is not None:
            values[":arn"] = execution_arn
            update += ", execution_arn = :arn"
        try:
            with transient_errors("mark running"):
                self._client.update_item(
                    TableName=self._table,
                    Key=self.key(entity_id),
                    UpdateExpression=update,
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s IN (:accepted, :running)",
                    ExpressionAttributeNames={"#s": "status", "#r": "run"},
                    ExpressionAttributeValues=to_item(values),
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            if execution_arn is not None:
                self.record_execution(entity_id, run=run, execution_arn=execution_arn)

    def record_execution(self, entity_id: str, *, run: int, execution_arn: str) -> None:
        try:
            with transient_errors("record execution arn"):
                self._client.update_item(
                    TableName=self._table,
                    Key=self.key(entity_id),
                    UpdateExpression="SET execution_arn = :arn",
                    ConditionExpression="attribute_exists(pk) AND #r = :run",
                    ExpressionAttributeNames={"#r": "run"},
                    ExpressionAttributeValues=to_item({":arn": execution_arn, ":run": run}),
                )
        except ClientError as stale:
            if error_code(stale) != CONDITION_FAILED:
                raise
            # The entity moved on to a later run meanwhile: this run's ARN is history.

    def start_next_run(self, entity_id: str, *, run: int) -> T:
        """Run N FAILED -> run N+1 ACCEPTED, or RerunRefused. The write carries this call's token,
        so the SDK's resend of a transition whose answer was lost finds its own write and answers
        the entity as it is now, instead of refusing the run the transition began."""
        token = CallToken()
        try:
            with transient_errors("start next run"):
                response = self._client.update_item(
                    TableName=self._table,
                    Key=self.key(entity_id),
                    UpdateExpression=f"SET #r = :next, #s = :accepted, accepted_at = :at, {CallToken.SET} "
                    "REMOVE execution_arn, finished_at",
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s = :failed",
                    ExpressionAttributeNames={"#s": "status", "#r": "run", **token.names},
                    ExpressionAttributeValues={
                        **to_item(
                            {
                                ":next": run + 1,
                                ":run": run,
                                ":accepted": RunStatus.ACCEPTED.value,
                                ":failed": RunStatus.FAILED.value,
                                ":at": now_iso(),
                            }
                        ),
                        **token.values,
                    },
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            old = error.response.get("Item")
            if not old:
                raise RerunRefused(f"no {self._entity.name} {entity_id!r}") from error
            if token.wrote(old):
                return self._decode(from_item(old))
            current = from_item(old)
            raise RerunRefused(
                f"{self._entity.name} {entity_id} is {current['status']} on run {current.get('run', 1)}; run "
                f"{run + 1} may start only after run {run} ended FAILED"
            ) from error
        return self._decode(from_item(response["Attributes"]))

    def status_write(self, entity_id: str, status: str) -> Write:
        """The write that ends a run with `status` (a step's effect commits it with its fence)."""
        return Write(
            entry={
                "Update": {
                    "TableName": self._table,
                    "Key": self.key(entity_id),
                    "UpdateExpression": "SET #s = :status, finished_at = :at",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": to_item({":status": str(status), ":at": now_iso()}),
                }
            }
        )


@dataclass(frozen=True)
class RunRecord:
    """An entity's record as far as its runs go, without its business terms (an `EntityRun`, with
    the time it was created): what an operator's tool reads and moves."""

    entity_id: str
    idempotency_key: str
    created_at: str  # ISO 8601, UTC
    run: int
    status: str  # a RunStatus value
    execution_arn: str | None = None


def run_records(*, client: Any, table_name: str, entity: Entity) -> DynamoRunStore[RunRecord]:
    """Any service's entity table, read and moved by its run attributes only (module doc)."""

    def decode(values: Mapping[str, Any]) -> RunRecord:
        return RunRecord(
            entity_id=str(values[entity.id_field]),
            idempotency_key=str(values["idempotency_key"]),
            created_at=str(values["created_at"]),
            run=int(values.get("run", 1)),
            status=str(values["status"]),
            execution_arn=values.get("execution_arn"),
        )

    def refuse(record: RunRecord) -> Mapping[str, Any]:
        # Without its terms the entity would be one its own service cannot read.
        raise TypeError(
            f"a run view never creates {entity.name} {record.entity_id!r}; its service's store does"
        )

    return DynamoRunStore(client=client, table_name=table_name, entity=entity, encode=refuse, decode=decode)
