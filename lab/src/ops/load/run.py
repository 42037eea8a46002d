"""One round of load: N entities from C clients over HTTP, each followed until it is final.

Each client is a thread with one keep-alive HTTP connection (a new one after any failure). It keeps
at most `window` entities of its own in flight: it POSTs the next request while it has room, and
GETs each entity it created once per `poll` seconds until it reads a status a step of the
workflow sets (the sample's COMPLETED or FAILED). Its bodies are the proof's requests for the
happy outcome (`ops.outcomes`). An entity's end-to-end latency runs from the start of its POST to
the GET that first read it final (so it is rounded up to the poll interval). A request that got no
answer (connection reset, refused, dropped: counted), a 429 (the stage's throttle) or a 5xx is sent
again after a short pause, the POST with the same Idempotency-Key, as a client would, at most
`RESENDS` times. Every loop is bounded: by the round's deadline, and by `stall` seconds without any
entity accepted or final.
"""

from __future__ import annotations

import functools
import http.client
import json
import statistics
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ops.outcomes import entity_route, id_field, outcomes, request_factory, starting_route
from ops.service import service
from reliability.declaration import Service

RESEND_PAUSE_SECONDS = 0.5
RESENDS = 5


@dataclass(frozen=True)
class Plan:
    entities: int  # POSTs per round, each creating one entity
    clients: int
    window: int = 4
    poll: float = 1.0
    deadline: float = 900.0  # seconds a round may take at most
    stall: float = 120.0  # seconds without progress (an entity accepted or final) that end a round


@dataclass
class Tally:
    """What the clients saw in one round (appended under `lock`)."""

    post_ms: list[float] = field(default_factory=list)
    get_ms: list[float] = field(default_factory=list)
    end_to_end_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    final: Counter[str] = field(default_factory=Counter)
    connection_errors: Counter[str] = field(default_factory=Counter)
    not_accepted: int = 0
    last_final: float = 0.0
    last_progress: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass
class _Pending:
    entity_id: str
    posted: float
    next_poll: float


class _Connection:
    """One client's keep-alive connection to the API host; reopened after a failure."""

    def __init__(self, base_url: str, tally: Tally) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path if parts.path.endswith("/") else parts.path + "/"
        self._tally = tally
        self._conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any]:
        """(status, decoded JSON); status 0 when the connection failed (counted by error kind)."""
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self._host, self._port, timeout=120)
        try:
            self._conn.request(method, self._prefix + path, body=body, headers=headers)
            response = self._conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            with self._tally.lock:
                self._tally.connection_errors[type(exc).__name__] += 1
            self.close()
            return 0, None
        if response.will_close:
            self.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Round:
    """Runs one round of a plan against the API base URL (`http://127.0.0.1:<port>/<stage>/`)."""

    def __init__(self, base_url: str, plan: Plan, *, label: str, declared: Service | None = None) -> None:
        if urlsplit(base_url).hostname != "127.0.0.1":
            raise ValueError(f"load only goes to the local cloud on 127.0.0.1, not {base_url}")
        declared = declared or service()
        # Each request is the service's own for its happy outcome (its proof's `request`)
        self._body = functools.partial(request_factory(declared), outcomes(declared)[0].name)
        self._create_path = starting_route(declared).path.lstrip("/")
        reading = entity_route(declared)
        self._id_field = id_field(declared)
        self._final = frozenset(
            s.status for s in declared.steps if s.status
        )  # the sample's COMPLETED, FAILED
        self._read_path = (reading.path if reading else "").lstrip("/")
        self.base_url = base_url
        self.plan = plan
        self.label = label
        self.tally = Tally()
        self._next = 0
        self._take_lock = threading.Lock()

    def _stalled(self) -> bool:
        with self.tally.lock:
            return time.monotonic() - self.tally.last_progress > self.plan.stall

    def _take(self) -> int | None:
        with self._take_lock:
            if self._next >= self.plan.entities:
                return None
            self._next += 1
            return self._next

    def _timed(
        self, conn: _Connection, method: str, path: str, body: bytes | None = None, key: str | None = None
    ) -> tuple[int, Any, float]:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if key is not None:
            headers["Idempotency-Key"] = key
        for _ in range(RESENDS):
            started = time.monotonic()
            status, document = conn.request(method, path, body, headers)
            elapsed = (time.monotonic() - started) * 1000
            with self.tally.lock:
                self.tally.statuses[f"{method} {status}"] += 1
            if status not in (0, 429) and status < 500:
                break
            time.sleep(RESEND_PAUSE_SECONDS)  # the same request again (the same key for a POST)
        return status, document, elapsed

    def _post(self, conn: _Connection, number: int, pending: list[_Pending]) -> None:
        posted = time.monotonic()
        status, document, elapsed = self._timed(
            conn, "POST", self._create_path, json.dumps(self._body(number)).encode(), str(uuid.uuid4())
        )
        if status == 202 and isinstance(document, dict) and document.get(self._id_field):
            with self.tally.lock:
                self.tally.post_ms.append(elapsed)
                self.tally.last_progress = time.monotonic()
            pending.append(_Pending(str(document[self._id_field]), posted, time.monotonic() + self.plan.poll))
        else:
            with self.tally.lock:
                self.tally.not_accepted += 1

    def _poll(self, conn: _Connection, entity: _Pending, pending: list[_Pending]) -> None:
        status, document, elapsed = self._timed(
            conn, "GET", self._read_path.replace("{" + self._id_field + "}", entity.entity_id)
        )
        now = time.monotonic()
        if status == 200:
            with self.tally.lock:
                self.tally.get_ms.append(elapsed)
        state = document.get("status") if status == 200 and isinstance(document, dict) else None
        if state in self._final:
            pending.remove(entity)
            with self.tally.lock:
                self.tally.end_to_end_ms.append((now - entity.posted) * 1000)
                self.tally.final[str(state)] += 1
                self.tally.last_final = self.tally.last_progress = max(self.tally.last_final, now)
        else:
            entity.next_poll = now + self.plan.poll

    def _client(self) -> None:
        conn = _Connection(self.base_url, self.tally)
        pending: list[_Pending] = []
        exhausted = False
        try:
            while time.monotonic() < self._deadline and not self._stalled():
                due = min(pending, key=lambda p: p.next_poll, default=None)
                now = time.monotonic()
                if due is not None and due.next_poll <= now:
                    self._poll(conn, due, pending)
                elif not exhausted and len(pending) < self.plan.window:
                    number = self._take()
                    if number is None:
                        exhausted = True
                    else:
                        self._post(conn, number, pending)
                elif due is None:
                    return  # nothing left to place or follow
                else:
                    time.sleep(max(0.0, due.next_poll - now))
        finally:
            conn.close()

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        self._deadline = started + self.plan.deadline
        self.tally.last_progress = started
        threads = [
            threading.Thread(target=self._client, name=f"load-client-{i}", daemon=True)
            for i in range(self.plan.clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self.plan.deadline + 150)  # a request's own timeout past the deadline
        return self.figures(started)

    def figures(self, started: float) -> dict[str, Any]:
        tally = self.tally
        completed = sum(tally.final.values())
        span = (tally.last_final or time.monotonic()) - started
        return {
            "round": self.label,
            "entities": self.plan.entities,
            "clients": self.plan.clients,
            "final": dict(tally.final),
            "not_accepted": tally.not_accepted,
            "not_final": self.plan.entities - tally.not_accepted - completed,
            "seconds": round(span, 1),
            "entities_per_second": round(completed / span, 2) if span > 0 else 0.0,
            "post_ms": percentiles(tally.post_ms),
            "get_ms": percentiles(tally.get_ms),
            "end_to_end_ms": percentiles(tally.end_to_end_ms),
            "statuses": dict(sorted(tally.statuses.items())),
            "connection_errors": dict(tally.connection_errors),
        }


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p95, p99 and max in ms (empty: no samples)."""
    if not samples:
        return {}
    if len(samples) == 1:
        return {"p50": round(samples[0], 1), "p95": round(samples[0], 1), "p99": round(samples[0], 1)}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "p50": round(cuts[49], 1),
        "p95": round(cuts[94], 1),
        "p99": round(cuts[98], 1),
        "max": round(max(samples), 1),
    }
