"""One fuzz run: hypothesis draws requests, a transport sends them, the oracle judges each answer,
then the stores are checked: no order and no HTTP idempotency record that no accepted request
explains (so no rejected request changed state), and every accepted order reads back as sent.

The transport is anything that turns a `Request` into an `Answer`: HTTP against a running API
(`ops.fuzz.transport.HttpTransport`, `make fuzz`) or the local cloud's edge in-process
(tests/fuzz, in `make test`).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from ops.fuzz.oracle import Answer, Oracle, Tally
from ops.fuzz.requests import KNOWN, Request, fill, requests
from orders import items as layout

Transport = Callable[[Request], Answer]
MAX_THROTTLE_RESENDS = 20


@dataclass(frozen=True)
class Stores:
    """The two tables a POST writes (boto3 DynamoDB client)."""

    dynamodb: Any
    orders_table: str
    idempotency_table: str

    def order_ids(self) -> set[str]:
        return {
            str(layout.order_id_of(item["pk"]["S"]))
            for item in _scan(self.dynamodb, self.orders_table)
            if item["sk"]["S"] == layout.ORDER_SK
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
        self.accepted: dict[str, dict[str, Any]] = {}  # order id -> the order sent
        self.progress: Callable[[str], None] | None = None

    def _concrete(self, request: Request) -> Request:
        """Fill the placeholders: a key never sent before, the run id, an order accepted earlier."""
        fresh = f"{self.run_id}-{next(self._counter)}"
        headers = tuple((name, fill(value, fresh=fresh, run=self.run_id)) for name, value in request.headers)
        path = request.path
        if KNOWN in path:
            if self.accepted:
                known = list(self.accepted)[next(self._counter) % len(self.accepted)]
                path = path.replace(KNOWN, known)
            else:
                path, request = path.replace(KNOWN, "o-none"), replace(request, expect=frozenset({404}))
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
        if request.method == "POST" and answer.status == 202 and answer.header("Idempotent-Replayed") is None:
            self.tally.accepted += 1
            order_id = json.loads(answer.body)["order_id"]
            self.accepted[order_id] = json.loads(request.body)

    def run(self, count: int, *, seed: int | None = None) -> Tally:
        before_orders, before_records = self.stores.order_ids(), self.stores.http_records()

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
        self._check_state(before_orders, before_records)
        self._check_readable()
        return self.tally

    def _check_state(self, before_orders: set[str], before_records: set[str]) -> None:
        new_orders = self.stores.order_ids() - before_orders
        new_records = self.stores.http_records() - before_records
        unexplained = new_orders - set(self.accepted)
        # One stored record per accepted key; anything more came from a rejected request.
        extra_records = max(0, len(new_records) - len(self.accepted))
        self.tally.state_changes = len(unexplained) + extra_records
        if unexplained or extra_records:
            self.tally.problems.append(
                f"state_changes: orders no accepted request explains {sorted(unexplained)[:5]}, "
                f"{extra_records} idempotency records beyond the accepted keys"
            )

    def _check_readable(self) -> None:
        for order_id, sent in self.accepted.items():
            request = Request(
                "GET", f"/{self.stage}/orders/{order_id}", (), b"", "GET accepted order", frozenset({200})
            )
            answer = self.send(request)
            self.oracle.check(request, answer, self.tally)
            view = json.loads(answer.body) if answer.status == 200 else {}
            if (view.get("items"), view.get("customer_id"), view.get("currency")) != (
                sent["items"],
                sent["customer_id"],
                sent["currency"],
            ):
                self.tally.unreadable += 1
                self.tally.problems.append(f"unreadable: {order_id} {answer.status} {answer.body[:200]!r}")
