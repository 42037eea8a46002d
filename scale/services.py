"""The AWS services the scale model runs on, in virtual time: the event loop, token buckets, Lambda
concurrency pools, SQS standard queues and their event source mappings (semantics in
``scale.model``'s docstring)."""

from __future__ import annotations

import functools
import heapq
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reliability.cdk.capacity import quota
from scale.topology import QueueSpec, Topology

if TYPE_CHECKING:
    from scale.model import Model

ESM_TICK_SECONDS = 60.0

# A record's outcome in a batch: delete it, leave it for the visibility timeout, or back off.
OK, FAIL, THROTTLED = "ok", "fail", "throttled"


class Sim:
    """The event loop: callbacks at virtual times."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.events = 0

    def at(self, when: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(when, self.now), next(self._seq), callback))

    def run(self, until: float) -> None:
        while self._heap and self._heap[0][0] <= until:
            self.now, _, callback = heapq.heappop(self._heap)
            self.events += 1
            callback()


class TokenBucket:
    def __init__(self, size: float, rate: float) -> None:
        self.size, self.rate = size, rate
        self.tokens, self.last = size, 0.0
        self.blocked: tuple[float, float] | None = None

    def _refill(self, now: float) -> None:
        if now > self.last:
            self.tokens = min(self.size, self.tokens + (now - self.last) * self.rate)
            self.last = now

    def take(self, now: float) -> bool:
        if self.blocked and self.blocked[0] <= now < self.blocked[1]:
            self.tokens, self.last = 0.0, now
            return False
        self._refill(now)
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def wait(self, now: float) -> float:
        """Seconds until a token is there (at least a millisecond)."""
        if self.blocked and self.blocked[0] <= now < self.blocked[1]:
            return self.blocked[1] - now
        self._refill(now)
        return max((1 - self.tokens) / self.rate, 0.001)


class Pools:
    """Lambda concurrency: each reserved function's own slots, the rest from the account's pool."""

    def __init__(self, topology: Topology) -> None:
        self.reserved = {f.name: int(f.reserved) for f in topology.functions.values() if f.reserved}
        self.free = dict(self.reserved)
        self.account_free = topology.capacity.account_concurrency - sum(self.reserved.values())
        self.peak: Counter[str] = Counter()
        self.busy: Counter[str] = Counter()

    def acquire(self, function: str) -> bool:
        if function in self.free:
            if self.free[function] <= 0:
                return False
            self.free[function] -= 1
        elif self.account_free <= 0:
            return False
        else:
            self.account_free -= 1
        self.busy[function] += 1
        self.peak[function] = max(self.peak[function], self.busy[function])
        return True

    def release(self, function: str) -> None:
        self.busy[function] -= 1
        if function in self.free:
            self.free[function] += 1
        else:
            self.account_free += 1


@dataclass(eq=False)
class Message:
    ref: str  # order id, or event id (= order id: one OrderCompleted per order)
    sent_at: float
    poison: bool = False
    receive_count: int = 0
    receipt: int = 0
    visible_at: float = 0.0
    deleted: bool = False


class Queue:
    def __init__(self, sim: Sim, spec: QueueSpec) -> None:
        self.sim, self.spec = sim, spec
        self._visible: list[tuple[float, int, int, Message]] = []
        self._seq = itertools.count()
        self.dlq: list[Message] = []
        self.live = 0  # sent, neither deleted nor dead-lettered
        self.max_age = 0.0
        self.on_visible: Callable[[], None] = lambda: None

    def send(self, message: Message) -> None:
        self.live += 1
        self._schedule(message, self.sim.now)

    def _schedule(self, message: Message, when: float) -> None:
        message.visible_at = when
        heapq.heappush(self._visible, (when, next(self._seq), message.receipt, message))
        self.sim.at(when, self.on_visible)

    def receive(self, limit: int) -> list[Message]:
        now, batch = self.sim.now, list[Message]()
        while self._visible and len(batch) < limit and self._visible[0][0] <= now:
            _, _, receipt, message = heapq.heappop(self._visible)
            if message.deleted or receipt != message.receipt:
                continue
            self.max_age = max(self.max_age, now - message.sent_at)
            if message.receive_count >= self.spec.max_receive_count:
                # SQS moves it on the receive after maxReceiveCount.
                message.deleted = True
                self.live -= 1
                self.dlq.append(message)
                continue
            message.receive_count += 1
            message.receipt += 1
            self._schedule(message, now + self.spec.visibility_timeout)
            batch.append(message)
        return batch

    def change_visibility(self, message: Message, seconds: float) -> None:
        if not message.deleted:
            message.receipt += 1
            self._schedule(message, self.sim.now + seconds)

    def delete(self, message: Message) -> None:
        if not message.deleted:
            message.deleted = True
            self.live -= 1


class Esm:
    """An SQS event source mapping: scales its concurrent batches, receives, invokes, settles."""

    def __init__(self, model: Model, queue: Queue) -> None:
        self.model, self.queue, self.spec = model, queue, queue.spec
        self.cap = int(self.spec.max_concurrency or quota("esm_max_concurrency"))
        self.floor = min(int(quota("esm_initial_concurrency")), self.cap)
        self.target, self.running = self.floor, 0
        self.ticking = False
        self.backoff = model.topology.functions[self.spec.consumer].backoff_schedule
        self.resume_at = 0.0
        queue.on_visible = self.pump

    def arm(self) -> None:
        self.pump()
        if not self.ticking:
            self.ticking = True
            self.model.sim.at(self.model.sim.now + ESM_TICK_SECONDS, self._tick)

    def _tick(self) -> None:
        # Up to 300 more concurrent batches a minute while messages wait; back to the floor idle.
        if self.queue.live:
            self.target = min(self.cap, self.target + int(quota("esm_scale_per_minute")))
            self.model.sim.at(self.model.sim.now + ESM_TICK_SECONDS, self._tick)
        else:
            self.target, self.ticking = self.floor, False

    def pump(self) -> None:
        sim, function = self.model.sim, self.spec.consumer
        if sim.now < self.resume_at:
            return
        while self.running < self.target:
            batch = self.queue.receive(self.spec.batch_size)
            if not batch:
                return
            if not self.model.pools.acquire(function):
                # Throttled: the batch returns after its visibility timeout; the poller backs off.
                self.model.throttles[f"Lambda {function}"] += 1
                self.resume_at = sim.now + 1.0
                sim.at(self.resume_at, self.pump)
                return
            self.running += 1
            duration, outcomes = self.model.handle(function, batch)
            sim.at(sim.now + duration, functools.partial(self._settle, batch, outcomes))

    def _settle(self, batch: list[Message], outcomes: list[str]) -> None:
        self.model.pools.release(self.spec.consumer)
        self.running -= 1
        self.model.last_activity = self.model.sim.now
        for message, outcome in zip(batch, outcomes, strict=True):
            if outcome == OK:
                self.queue.delete(message)
            elif outcome == THROTTLED and self.backoff:
                # The worker's ChangeMessageVisibility: the schedule's entry for this receive.
                step = self.backoff[min(message.receive_count, len(self.backoff)) - 1]
                self.queue.change_visibility(message, step)
                self.model.retries["StartExecution throttled (visibility backoff)"] += 1
            elif outcome == THROTTLED:
                self.model.retries["StartExecution throttled (visibility timeout)"] += 1
        self.pump()
