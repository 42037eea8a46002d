"""Callers as a search dimension, and a client's retry that comes back late.

- `another-caller`: a second client (another IAM principal: another `requestContext` identity)
  sends request i's Idempotency-Key (shared or guessed: clients pick keys like `<entity>-1003`),
  with the same body or another, or GETs entity i by its id on the declared reading route.
  Oracle (`violations`): nobody is answered with another caller's data (a 2xx to a POST or a GET
  naming an entity another caller created), and nobody is told another caller's key is in use
  (a 409 or 422 to a caller's first use of a key: the key's identity names the caller, so it is
  a fresh key for this one).
- `late-retry`: the world request i depends on changes (one of its proof's `CHANGES`: the
  sample's removes an item asked for or raises its price), time passes just beyond the HTTP key window (its
  record deleted by TTL), and request i's client retries with the same key and body. Oracle
  (`chaos.exchanges.HttpClient.http_violations`): a retry with the same key and body of an entity
  that exists gets that entity (2xx), never a 4xx.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chaos.exchanges import Exchange
from ops.outcomes import change, changes, entity_route, id_field, starting_route
from ops.service import service
from ops.stack_outputs import table_names, table_output
from reliability.errors import KEY_REUSED
from reliability.http import ANONYMOUS, caller_of
from reliability.run_store import record_key
from simulator.clients import DIED
from simulator.cloud import LambdaError

if TYPE_CHECKING:
    from chaos.cloud import ChaosCloud
    from chaos.schedules import Action

# The answers that say a key is in use (reused with another body, or its request still running).
KEY_IN_USE = frozenset({KEY_REUSED, "RequestInProgress"})
# Another client of the API: an IAM user of the same account (the first client is unsigned, as
# on the local stage: `reliability.http.ANONYMOUS`).
OTHER_CALLER = "arn:aws:iam::123456789012:user/another-client"
VARIANTS = ("same-body", "other-body", "get")
SERVICE = service()
CHANGES = changes(SERVICE)  # how the world a request depends on may change (its proof's)
STARTING_PATH = starting_route(SERVICE).path
READING = entity_route(SERVICE)
ID_FIELD = id_field(SERVICE)
MARGIN_SECONDS = 60  # how far past the HTTP key window the late retry comes


@dataclass(frozen=True)
class Read:
    """One GET of an entity (the declared reading route) as its caller saw it."""

    caller: str
    entity_id: str
    status: int
    body: Any


@dataclass
class CallerLog:
    """What the other callers sent and were answered (their POSTs are in `cloud.exchanges` too)."""

    reads: list[Read] = field(default_factory=list)


def another_caller(cloud: ChaosCloud, action: Action, keys: Sequence[tuple[str, str]]) -> None:
    from chaos.schedules import sent_body  # noqa: PLC0415 - schedules imports this module

    index = action.entity % len(keys)
    kind, key = keys[index]
    if action.variant == "get":
        entity_id = _entity_id_of(cloud, key)
        if entity_id is not None and READING is not None:
            path = READING.path.replace("{" + ID_FIELD + "}", entity_id)
            status, answer, _ = _call(cloud, "GET", path, None, {})
            cloud.callers.reads.append(Read(OTHER_CALLER, entity_id, status, answer))
        return
    body = sent_body(kind, index, changed=action.variant == "other-body")
    status, answer, headers = _call(cloud, "POST", STARTING_PATH, body, {"Idempotency-Key": key})
    cloud.exchanges.append(
        Exchange(key, status, answer, replayed=False, request=body, headers=headers, caller=OTHER_CALLER)
    )


def late_retry(cloud: ChaosCloud, action: Action, keys: Sequence[tuple[str, str]]) -> None:
    from chaos.schedules import sent_body  # noqa: PLC0415

    index = action.entity % len(keys)
    kind, key = keys[index]
    body = sent_body(kind, index)
    if action.variant or CHANGES:
        tables = table_names(SERVICE, cloud.outputs)
        change(SERVICE, cloud.dynamodb, tables, body, action.variant or CHANGES[0])
    window = int(cloud.functions[cloud.function("Api")].environment["IDEMPOTENCY_TTL_SECONDS"])
    cloud.pass_time(window + MARGIN_SECONDS)  # at rest first, then the key's record expires
    cloud.post_request(key, body)


def _call(
    cloud: ChaosCloud, method: str, path: str, body: Any, headers: dict[str, str]
) -> tuple[int, Any, tuple[tuple[str, str], ...]]:
    try:
        response = cloud.api(method, path, body=body, headers=headers, caller=OTHER_CALLER)
    except LambdaError:
        return DIED, None, ()
    return response.status, response.body, tuple(response.headers.items())


def _entity_id_of(cloud: ChaosCloud, key: str) -> str | None:
    """The entity the first client's key was answered with (None: never answered 2xx)."""
    for exchange in cloud.exchanges:
        if exchange.key == key and not exchange.caller and 200 <= exchange.status < 300:
            return str(exchange.body[ID_FIELD])
    return None


def violations(cloud: ChaosCloud) -> list[str]:
    """Nobody reads or replays another caller's data, nor learns another caller's key is in use."""
    found = []
    owners: dict[str, str | None] = {}

    def owner(entity_id: str) -> str | None:
        if entity_id not in owners:
            item = cloud.dynamodb.get_item(
                TableName=cloud.outputs[table_output(SERVICE.entity.table)],
                Key=record_key(SERVICE.entity, entity_id),
                ConsistentRead=True,
            ).get("Item")
            owners[entity_id] = item["owner"]["S"] if item and "owner" in item else None
        return owners[entity_id]

    answers = [(e.caller, f"POST with key {e.key}", e.status, e.body) for e in cloud.exchanges]
    answers += [(r.caller, f"GET {r.entity_id}", r.status, r.body) for r in cloud.callers.reads]
    for caller, request, status, body in answers:
        named = body.get(ID_FIELD) if isinstance(body, dict) else None
        if not (200 <= status < 300 and isinstance(named, str)):
            continue
        who = _identity(caller)
        placed_by = owner(named)
        if placed_by is not None and placed_by != who:
            found.append(
                f"{who}: {request} answered {status} with {SERVICE.entity.name} {named}, "
                f"which {placed_by} placed"
            )
    first_use: set[tuple[str, str]] = set()
    for exchange in cloud.exchanges:
        use = (exchange.caller, exchange.key)
        code = exchange.body.get("error") if isinstance(exchange.body, dict) else None
        if exchange.caller and use not in first_use and code in KEY_IN_USE:
            detail = json.dumps(exchange.body)[:160]
            found.append(
                f"{exchange.caller}: its first use of key {exchange.key} was answered {exchange.status} "
                f"({detail}): told another caller's key is in use"
            )
        first_use.add(use)
    return found


def _identity(caller: str) -> str:
    """The caller as the API names it (`reliability.http.caller_of`)."""
    return caller_of({"identity": {"userArn": caller}}) if caller else ANONYMOUS
