"""One fuzz run: hypothesis draws requests, a transport sends them, the oracle judges each answer,
then the stores are checked: no entity and no HTTP idempotency record that no accepted request
explains (so no rejected request changed state), and every accepted entity reads back as sent
(on the declared reading route: each field sent is the field read).

The transport is anything that turns a `Request` into an `Answer`: HTTP against a running API
(`ops.fuzz.transport.HttpTransport`, `make fuzz`) or the local cloud's edge in-process
(tests/fuzz, in `make test`).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from ops.fuzz.oracle import Answer, Oracle, Tally
from ops.fuzz.requests import KNOWN, Request, accepted_id, fill, read_back, requests
from ops.service import service
from ops.stack_outputs import IDEMPOTENCY_TABLE_OUTPUT, table_output
from reliability.declaration import Entity

Transport = Callable[[Request], Answer]
MAX_THROTTLE_RESENDS = 20


@dataclass(frozen=True)
class Stores:
    """The two tables a POST writes (boto3 DynamoDB client): the entity's and the HTTP keys'."""

    dynamodb: Any
    entity_table: str
    idempotency_table: str
    entity: Entity = field(default_factory=lambda: service().entity)

    @classmethod
    def of(cls, dynamodb: Any, outputs: Mapping[str, str]) -> Stores:
        """The declared entity's table and the idempotency table, by the stack outputs."""
        entity = service().entity
        return cls(dynamodb, outputs[table_output(entity.table)], outputs[IDEMPOTENCY_TABLE_OUTPUT], entity)

    def entity_ids(self) -> set[str]:
        """The ids of the entities stored (`<name>#<id>` / `<name>`: `reliability.declaration.Entity`)."""
        prefix = self.entity.partition("")
        return {
            item["pk"]["S"].removeprefix(prefix)
            for item in _scan(self.dynamodb, self.entity_table)
            if item["sk"]["S"] == self.entity.name and item["pk"]["S"].startswith(prefix)
        }

    def http_records(self) -> set[str]:
        return {
            item["id"]["S"]
            for item in _scan(self.dynamodb, self.idempotency_table)
            if item["id"]["S"].startswith("http#")
        }


def _scan(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        items += page["Items"]
    return items


class Runner:
    def __init__(
        self, transport: Transport, stores: Stores, *, stage: str, pause: Callable[[float], None] = time.sleep
    ) -> None:
        self.transport = transport
        self.stores = stores
        self.oracle = Oracle(stage)
        self.stage = stage
        self.tally = Tally()
        self.run_id = uuid.uuid4().hex[:10]
        self._counter = itertools.count()
        self._pause = pause
        self.accepted: dict[str, dict[str, Any]] = {}  # entity id -> the body sent
        self.progress: Callable[[str], None] | None = None

    def _concrete(self, request: Request) -> Request:
        """Fill the placeholders: a key never sent before, the run id, an entity accepted earlier."""
        fresh = f"{self.run_id}-{next(self._counter)}"
        headers = tuple((name, fill(value, fresh=fresh, run=self.run_id)) for name, value in request.headers)
        path = request.path
        if KNOWN in path:
            if self.accepted:
                known = list(self.accepted)[next(self._counter) % len(self.accepted)]
                path = path.replace(KNOWN, known)
            else:
                none = f"{self.stores.entity.id_prefix}none"
                path, request = path.replace(KNOWN, none), replace(request, expect=frozenset({404}))
        return replace(request, headers=headers, path=path)

    def send(self, request: Request) -> Answer:
        """Send; a 429 (the stage's throttle) is judged, then the request is sent again after its
        Retry-After, as a client would."""
        for _ in range(MAX_THROTTLE_RESENDS):
            answer = self.transport(request)
            if answer.status != 429:
                return answer
            self.tally.throttled += 1
            self.oracle.check(request, answer, Tally())  # shape and documentation still hold
            self._pause(float(answer.header("Retry-After") or 1))
        return answer

    def one(self, drawn: Request) -> None:
        request = self._concrete(drawn)
        answer = self.send(request)
        self.oracle.check(request, answer, self.tally)
        if self.progress is not None and self.tally.requests % 500 == 0:
            self.progress(f"{self.tally.requests} requests, {len(self.tally.problems)} problems so far")
        accepted = request.method == "POST" and 200 <= answer.status < 300
        if accepted and answer.header("Idempotent-Replayed") is None:
            self.tally.accepted += 1
            self.accepted[accepted_id(json.loads(answer.body))] = json.loads(request.body)

    def run(self, count: int, *, seed: int | None = None) -> Tally:
        before_entities, before_records = self.stores.entity_ids(), self.stores.http_records()

        @settings(
            max_examples=count,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(requests(self.stage))
        def fuzz(request: Request) -> None:
            self.one(request)

        if seed is not None:
            fuzz = hypothesis_seed(seed)(fuzz)
        fuzz()
        self._check_state(before_entities, before_records)
        self._check_readable()
        return self.tally

    def _check_state(self, before_entities: set[str], before_records: set[str]) -> None:
        new_entities = self.stores.entity_ids() - before_entities
        new_records = self.stores.http_records() - before_records
        unexplained = new_entities - set(self.accepted)
        # One stored record per accepted key; anything more came from a rejected request.
        extra_records = max(0, len(new_records) - len(self.accepted))
        self.tally.state_changes = len(unexplained) + extra_records
        if unexplained or extra_records:
            self.tally.problems.append(
                f"state_changes: entities no accepted request explains {sorted(unexplained)[:5]}, "
                f"{extra_records} idempotency records beyond the accepted keys"
            )

    def _check_readable(self) -> None:
        for entity_id, sent in self.accepted.items():
            request = read_back(self.stage, entity_id)
            if request is None:
                return
            answer = self.send(request)
            self.oracle.check(request, answer, self.tally)
            view = json.loads(answer.body) if answer.status == 200 else {}
            if answer.status >= 300 or {name: view.get(name) for name in sent} != sent:
                self.tally.unreadable += 1
                self.tally.problems.append(f"unreadable: {entity_id} {answer.status} {answer.body[:200]!r}")
