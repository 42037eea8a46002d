"""Inspect and reset idempotency state, one record at a time, with a confirmation and an audit line.

    python -m ops.idem show --key KEY [--caller C]     # the create route's HTTP record of a caller's key
    python -m ops.idem forget --key KEY [--caller C] [--yes]  # delete it (refused while live)
    python -m ops.idem fence-show --id ID --step S [--run N]   # ID: the entity's id
    python -m ops.idem fence-reset --id ID --step S [--run N] [--yes]

Each delete prints what it will remove, asks `yes` (or takes `--yes`), is conditioned on the record
being what was shown (so a record that changed in between is not deleted; one already gone when
the delete is answered, as after the SDK's resend of a delete that landed, is deleted), refuses a
record held by a live attempt, and writes an audit event (one JSON line on stderr and in
`<state dir>/audit.log`).
When to reset and when to start a new run instead: docs/operating.md,
"Inspecting and resetting idempotency state".
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from botocore.exceptions import ClientError

from ops.service import service
from ops.stack_outputs import IDEMPOTENCY_TABLE_OUTPUT
from ops.story.collect import add_caller_argument, create_route, plain, record_location
from ops.target import DEFAULT_STAGE, Target, local_state_dir, run_tool
from reliability import FenceRecord, FenceState
from reliability.declaration import Service
from reliability.http import ANONYMOUS, RECORD_PREFIX, scoped_key
from reliability.keys import derive_key, execution_token
from reliability.saga import SAGA_NAMESPACE

POWERTOOLS_IN_PROGRESS = "INPROGRESS"
# reliability.http hands Powertools key_prefix RECORD_PREFIX, `event_key_jmespath="key"` (the
# scoped key value) and sha256: the record id below follows (a test pins it against it).


class Refused(RuntimeError):
    """The record may not be deleted now (a live attempt holds it, or it changed)."""


def http_record_id(
    raw_key: str, *, stage: str, caller: str = ANONYMOUS, route: str | None = None
) -> tuple[str, str]:
    """(Powertools record id, scoped key) of a caller's Idempotency-Key on `route` (default: the
    service's idempotent route)."""
    scoped = scoped_key(stage=stage, route=route or create_route(), raw_key=raw_key, caller=caller).value
    digest = hashlib.sha256(json.dumps(scoped, sort_keys=True).encode()).hexdigest()
    return f"{RECORD_PREFIX}#{digest}", scoped


def fence_record_id(entity_id: str, step: str, *, stage: str, run: int = 1) -> tuple[str, str]:
    """(fence record id, execution token) of a saga step of one run of an entity."""
    token = execution_token(stage=stage, business_id=entity_id, run=run)
    key = derive_key(SAGA_NAMESPACE, stage=stage, identity={"token": token, "step": step})
    return key.value, token


@dataclass(frozen=True)
class Shown:
    """A record as printed to the operator, and the condition that keeps a delete to exactly it."""

    lines: list[str]
    live: bool
    condition: str
    names: dict[str, str]
    values: dict[str, Any]
    # Why it may never be deleted (None: it may, once confirmed and not live).
    refused: str | None = None


def _when(epoch: float | None, now: float) -> str:
    if epoch is None:
        return "-"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    delta = epoch - now
    return f"{stamp} ({'in ' if delta >= 0 else ''}{abs(delta):.0f}s{'' if delta >= 0 else ' ago'})"


def describe_http(item: Mapping[str, Any], *, raw_key: str, scoped: str, now: float) -> Shown:
    data = plain(item)
    status = str(data.get("status"))
    in_progress_until = (
        float(data["in_progress_expiration"]) / 1000 if "in_progress_expiration" in data else None
    )
    live = status == POWERTOOLS_IN_PROGRESS and (in_progress_until or 0) >= now
    lines = [
        f"record   {data['id']}",
        f"status   {status}{'  (a request is running: live lease)' if live else ''}",
        f"expires  {_when(float(data['expiration']) if 'expiration' in data else None, now)}",
    ]
    if status == POWERTOOLS_IN_PROGRESS:
        lines.append(f"lease    {_when(in_progress_until, now)}")
    try:
        response = json.loads(str(data.get("data") or "null"))
    except ValueError:
        response = None
    if isinstance(response, dict):
        body = response.get("body")
        body = json.loads(body) if isinstance(body, str) and body.startswith("{") else body
        summary = (
            ", ".join(f"{k}={v}" for k, v in body.items() if k != "status_url")
            if isinstance(body, dict)
            else ""
        )
        lines.append(f"response {response.get('status', response.get('statusCode', '?'))} {summary}")
    lines.append(f"input    Idempotency-Key {raw_key!r} on {create_route()} (stored key {scoped})")
    lines.append(f"payload  sha256 {data.get('validation', '-')} (the body itself is not stored)")
    return Shown(
        lines,
        live,
        "#s = :s AND #e = :e",
        {"#s": "status", "#e": "expiration"},
        {":s": item["status"], ":e": item["expiration"]},
    )


def describe_fence(item: Mapping[str, Any], *, now: float, carried: bool = False) -> Shown:
    """`carried`: the record is on the business item its step's effect wrote
    (`ops.service.record_at`): a COMPLETED one IS that effect's item, never deleted here."""
    record = FenceRecord.from_item(item)
    live = record.lease_live(now)
    lines = [
        f"record   {record.key}",
        f"state    {record.state.value}{'  (an attempt holds a live lease)' if live else ''}",
        f"fencing  token {record.fencing_token}" + (f", owner {record.owner}" if record.owner else ""),
        f"expires  {_when(record.expiration, now)}",
    ]
    if record.state is FenceState.IN_PROGRESS:
        lines.append(f"lease    {_when(record.lease_expires, now)}")
    if record.result is not None:
        lines.append(f"result   {json.dumps(record.result, sort_keys=True)[:200]}")
    if record.error_type:
        lines.append(f"error    {record.error_type}: {record.error_message}")
    lines.append(f"input    {record.label}")
    refused = None
    if carried:
        lines.append("on       the business item its effect wrote (no TTL: it lives as long as the item)")
        if record.state is FenceState.COMPLETED:
            refused = (
                "refused: this record is carried by the item its step's effect wrote; deleting it "
                "would delete the effect's item, and a restart would apply the effect again "
                "(docs/operating.md, 'Inspecting and resetting idempotency state')"
            )
    return Shown(
        lines,
        live,
        "#s = :s AND #f = :f",
        {"#s": "state", "#f": "fencing_token"},
        {":s": item["state"], ":f": item.get("fencing_token", {"N": "0"})},
        refused,
    )


@dataclass
class Idem:
    """The four commands over one table client; `confirm` asks the operator."""

    dynamodb: Any
    table: str
    console: IO[str]
    confirm: Callable[[str], bool]
    audit_log: Path | None = None
    clock: Callable[[], float] = time.time

    def get(self, record_id: RecordKey) -> dict[str, Any] | None:
        item = self.dynamodb.get_item(TableName=self.table, Key=_key(record_id), ConsistentRead=True)
        found = item.get("Item")
        return dict(found) if found else None

    def show(self, record_id: RecordKey, describe: Callable[[Mapping[str, Any]], Shown]) -> Shown | None:
        item = self.get(record_id)
        if item is None or (not isinstance(record_id, str) and "state" not in item):  # no record on it
            self.console.write(f"no record {_shown(record_id)} in {self.table}\n")
            return None
        shown = describe(item)
        self.console.write("\n".join(shown.lines) + "\n")
        return shown

    def forget(
        self, record_id: RecordKey, describe: Callable[[Mapping[str, Any]], Shown], *, what: str
    ) -> bool:
        """Print, refuse a live record, confirm, delete exactly what was shown, audit. True: deleted."""
        shown = self.show(record_id, describe)
        if shown is None:
            return False
        if shown.refused:
            raise Refused(shown.refused)
        if shown.live:
            raise Refused(f"refused: {what} is IN_PROGRESS with a live lease; a request or attempt holds it")
        if not self.confirm(f"delete this {what} from {self.table}?"):
            self.console.write("nothing deleted\n")
            return False
        gone: dict[str, str] = {}
        try:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key=_key(record_id),
                ConditionExpression=shown.condition,
                ExpressionAttributeNames=shown.names,
                ExpressionAttributeValues=shown.values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            if "Item" in error.response:
                raise Refused(f"refused: the {what} changed since it was shown; nothing deleted") from error
            # Absent: what the operator asked for. A delete leaves no token to tell whose it was;
            # most likely this one's, whose answer was lost and which the SDK sent again.
            gone = {"answer": "the record was already gone when the delete was answered"}
        self.audit(
            {
                "event": "idempotency-state-deleted",
                "what": what,
                "table": self.table,
                "id": _shown(record_id),
                "record": shown.lines,
                **gone,
            }
        )
        self.console.write(f"deleted {_shown(record_id)}" + (f" ({gone['answer']})" if gone else "") + "\n")
        return True

    def audit(self, event: Mapping[str, Any]) -> None:
        line = json.dumps(
            {
                "audit": True,
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock())),
                "operator": _operator(),
                **event,
            },
            sort_keys=True,
        )
        print(line, file=sys.stderr)
        if self.audit_log is not None:
            self.audit_log.parent.mkdir(parents=True, exist_ok=True)
            with self.audit_log.open("a") as log:
                log.write(line + "\n")


# A record's id (the fence and idempotency tables' key), or the key of the item that carries it.
RecordKey = str | Mapping[str, Any]


def _key(record_id: RecordKey) -> dict[str, Any]:
    return {"id": {"S": record_id}} if isinstance(record_id, str) else dict(record_id)


def _shown(record_id: RecordKey) -> str:
    return record_id if isinstance(record_id, str) else "/".join(str(v["S"]) for v in record_id.values())


def _operator() -> str:
    try:
        return os.environ.get("AWS_PROFILE") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def ask(question: str) -> bool:
    if not sys.stdin.isatty():
        print(f"{question} (not a terminal: pass --yes to confirm)", file=sys.stderr)
        return False
    return input(f"{question} type 'yes': ").strip() == "yes"


def main(argv: list[str] | None = None, declared: Service | None = None) -> int:
    """`declared`: the service whose steps and records these are (default: `ops.service.service()`)."""
    declared = declared or service()
    parser = argparse.ArgumentParser(prog="python -m ops.idem", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("show", "forget", "fence-show", "fence-reset"))
    parser.add_argument("--key", help="the client's Idempotency-Key (show/forget)")
    add_caller_argument(parser)
    entity = declared.entity.name
    parser.add_argument("--id", dest="entity_id", help=f"the {entity}'s id (fence-show/fence-reset)")
    parser.add_argument(
        "--step", choices=[s.name for s in declared.steps], help="the saga step (fence-show/fence-reset)"
    )
    parser.add_argument("--run", type=int, default=1, help=f"the {entity}'s run (default 1)")
    parser.add_argument("--yes", action="store_true", help="confirm the delete without asking (scripts)")
    args = parser.parse_args(argv)
    target = Target.resolve()
    stage = "local" if target.local else os.environ.get("RETRYSAFE_STAGE", DEFAULT_STAGE)
    state_dir = local_state_dir()
    fence = args.command.startswith("fence")
    if fence and not (args.entity_id and args.step):
        parser.error("fence-show/fence-reset need --id and --step")
    if not fence and not args.key:
        parser.error("show/forget need --key")
    record: RecordKey
    if fence:
        record_id, token = fence_record_id(args.entity_id, args.step, stage=stage, run=args.run)
        table, record = record_location(
            target.outputs, entity_id=args.entity_id, token=token, step=args.step, declared=declared
        )
        carried = table != target.output("FenceTableName")
    else:
        table = target.output(IDEMPOTENCY_TABLE_OUTPUT)
    idem = Idem(
        dynamodb=target.client("dynamodb"),
        table=table,
        console=sys.stdout,
        confirm=(lambda _q: True) if args.yes else ask,
        audit_log=state_dir / "audit.log" if target.local else None,
    )
    now = time.time()
    if fence:
        describe: Callable[[Mapping[str, Any]], Shown] = lambda item: describe_fence(  # noqa: E731
            item, now=now, carried=carried
        )
        what = f"fence of {args.step} ({entity} {args.entity_id}, run {args.run}; record {record_id})"
    else:
        record, scoped = http_record_id(args.key, stage=stage, caller=args.caller)
        describe = lambda item: describe_http(item, raw_key=args.key, scoped=scoped, now=now)  # noqa: E731
        what = f"idempotency record of key {args.key!r}"
    try:
        if args.command in ("show", "fence-show"):
            return 0 if idem.show(record, describe) else 1
        return 0 if idem.forget(record, describe, what=what) else 1
    except Refused as refused:
        print(str(refused), file=sys.stderr)
        return 3


if __name__ == "__main__":
    run_tool(main)
