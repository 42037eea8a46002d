"""Crash points for the in-process cloud: record, arm, crash, and pause (for the scheduler).

`reliability.testing.crashpoints.CrashPlan` arms points by name from the environment and crashes the
first N hits. The chaos harness needs three more things, which it adds here by subclassing (the
production module is unchanged and still costs a `None` check when off):

- a *recording* mode: every point reached, per function, in order, with its occurrence number
  (the catalogue the exhaustive single-fault run iterates over);
- a crash at one exact hit: (function, point, occurrence), e.g. the 2nd
  `after:DynamoDB.PutItem` of a step's function (`hold-seat`) in this schedule;
- a listener called at every point, which the interleaving scheduler uses to pause an attempt
  before each AWS call;
- a *lost answer* at one exact call: the request reaches AWS and is applied, its answer never
  comes back (a read timeout after the client's `read_timeout`, on the world's clock), and the
  SDK sends the same request again, as botocore's retries do with the client's own configuration
  (the functions' `reliability.runtime.CLIENT_CONFIG`, the tools' `ops.target.CLIENT_CONFIG`): the
  resend meets the first attempt's write. It is armed at the call's `after:` hit (the n-th call
  of that operation by that function, counted at its `before:` point) and fires once, on the
  first send; the resend's answer comes back.

A point is `before:<Service>.<Operation>` / `after:<Service>.<Operation>` (botocore `before-call`
and `after-call` hooks on every client the runtime builds) or an explicit one reached through
`crash_point(name, plan)` (`fence:after-effect:<step>`: between an external effect and its record).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ReadTimeoutError

from reliability.testing.crashpoints import CrashPlan, ErrorPoint, SimulatedCrash

Listener = Callable[[str, str], None]


@dataclass(frozen=True, order=True)
class PointHit:
    """One crash point as the harness names it: the n-th hit of `point` in `function`."""

    function: str
    point: str
    occurrence: int = 1

    @property
    def label(self) -> str:
        return f"{self.function}:{self.point}#{self.occurrence}"

    @property
    def at_call(self) -> bool:
        """Before or after an AWS call, where an error response can be injected (the others sit
        between an external effect and its record)."""
        return self.point.startswith(("before:", "after:"))

    @property
    def call(self) -> str:
        """`<Service>.<Operation>` of a point at a call ("" for the others)."""
        return self.point.split(":", 1)[1] if self.at_call else ""

    def answer(self) -> PointHit:
        """The `after:` hit of this hit's call: where its answer comes back (or is lost)."""
        return PointHit(self.function, f"after:{self.call}", self.occurrence)

    @classmethod
    def parse(cls, label: str) -> PointHit:
        function, _, rest = label.partition(":")
        point, _, occurrence = rest.rpartition("#")
        return cls(function, point, int(occurrence))


# The transient errors each service answers with (what botocore raises once its own retries give
# up), plus transport failures; injected at `before:` (nothing happened) or `after:` (it happened,
# the response was lost) points of the catalogue.
TRANSIENT_ERRORS: dict[str, tuple[str, ...]] = {
    "DynamoDB": (
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "InternalServerError",
        "TransactionConflictException",
        "ReadTimeout",
    ),
    "SQS": ("InternalError", "ServiceUnavailable", "RequestThrottled", "ReadTimeout"),
    "SFN": ("ThrottlingException", "ServiceUnavailable", "InternalFailure", "ConnectTimeout"),
}


def errors_at(hit: PointHit) -> tuple[str, ...]:
    """The transient errors the service of `hit`'s call answers with."""
    service = hit.point.split(":", 1)[1].split(".", 1)[0] if ":" in hit.point else ""
    return TRANSIENT_ERRORS.get(service, ("InternalFailure",))


@dataclass
class CrashController:
    """Shared by every function of one cloud; thread-safe (Step Functions runs tasks on threads)."""

    armed: set[PointHit] = field(default_factory=set)
    # An armed `before:`/`after:` hit that fails the call instead: AWS's error code (or a transport
    # failure's name, `reliability.testing.crashpoints.TRANSPORT_ERRORS`), as `error:`/`error-after:` do.
    errors: dict[PointHit, str] = field(default_factory=dict)
    # Armed hits whose crash Lambda reports as Sandbox.Timedout (the invocation ran out of time).
    timeouts: set[str] = field(default_factory=set)
    # Armed hits where an operator stops the execution while the invocation runs (it dies too).
    stops: set[str] = field(default_factory=set)
    # Armed `after:` hits whose call's first answer is lost (the SDK sends the request again).
    lost: set[PointHit] = field(default_factory=set)
    # Armed hits where the step's execution reaches its time limit (Express) and the invocation
    # runs on; `time_limit` (set by the cloud) kills it.
    time_limits: set[PointHit] = field(default_factory=set)
    time_limit: Callable[[], None] = lambda: None
    reached: list[PointHit] = field(default_factory=list)
    fired: list[PointHit] = field(default_factory=list)
    failed: list[tuple[PointHit, str]] = field(default_factory=list)  # injected error responses
    lost_fired: list[PointHit] = field(default_factory=list)  # answers lost, each then resent
    listener: Listener | None = None
    # How the waiting for a lost answer passes (the world's clock moves by the read timeout).
    wait: Callable[[float], None] = lambda _seconds: None
    _counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _clients: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)

    def arm(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            self.armed.update(hits)

    def arm_errors(self, errors: Iterable[tuple[PointHit, str]]) -> None:
        with self._lock:
            self.errors.update(errors)

    def arm_timeouts(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            hits = list(hits)
            self.armed.update(hits)
            self.timeouts.update(h.label for h in hits)

    def arm_lost(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            self.lost.update(hit.answer() for hit in hits)

    def arm_stops(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            hits = list(hits)
            self.armed.update(hits)
            self.stops.update(h.label for h in hits)

    def arm_time_limits(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            self.time_limits.update(hits)

    def hit(self, function: str, point: str) -> str | None:
        """Count the hit; crash if it is armed; return the error code armed for it, if any."""
        return self.reach(function, point)[1]

    def reach(self, function: str, point: str) -> tuple[PointHit, str | None]:
        """`hit`, also returning the hit itself (its occurrence: which call this is)."""
        with self._lock:
            self._counts[(function, point)] += 1
            here = PointHit(function, point, self._counts[(function, point)])
            self.reached.append(here)
            fire = here in self.armed
            if fire:
                self.armed.discard(here)
                self.fired.append(here)
            limit = here in self.time_limits
            if limit:
                self.time_limits.discard(here)
                self.fired.append(here)
            error = self.errors.pop(here, None)
            if error is not None:
                self.failed.append((here, error))
        if self.listener is not None:
            self.listener(function, point)
        if limit:
            self.time_limit()
        if fire:
            raise SimulatedCrash(here.label)
        return here, error

    def take_lost(self, call: PointHit) -> bool:
        """True (once) when `call`'s answer is to be lost; the call's `before:` hit names it."""
        answer = call.answer()
        with self._lock:
            if answer not in self.lost:
                return False
            self.lost.discard(answer)
            self.lost_fired.append(answer)
            return True

    def plan_for(self, function: str) -> FunctionPlan:
        return FunctionPlan(self, function)

    def instrumented(self, client: Any) -> bool:
        return client in self._clients

    def by_function(self) -> dict[str, list[PointHit]]:
        out: dict[str, list[PointHit]] = {}
        for hit in self.reached:
            out.setdefault(hit.function, []).append(hit)
        return out


class FunctionPlan(CrashPlan):
    """The crash plan one function's runtime is built with: every point goes to the controller."""

    def __init__(self, controller: CrashController, function: str) -> None:
        super().__init__(points={}, mode="raise")
        self.controller = controller
        self.function = function

    def armed(self, point: str) -> bool:  # noqa: ARG002 - every point is live in the harness
        return True

    def hit(self, point: str) -> None:
        self.controller.hit(self.function, point)

    def instrument(self, client: Any) -> Any:
        url = str(client.meta.endpoint_url)
        controller = self.controller

        def fail(when: str, model: Any) -> PointHit:
            call = f"{model.service_model.service_id}.{model.name}"
            here, code = controller.reach(self.function, f"{when}:{call}")
            if code is not None:
                error = ErrorPoint.parse(f"{'error' if when == 'before' else 'error-after'}:{call}:{code}")
                if error is not None:
                    raise error.failure(client, model.name, url)
            return here

        def before(model: Any, **_: Any) -> None:
            if controller.take_lost(fail("before", model)):
                _losing.clients.add(id(client))  # this thread's next send of this client

        def after(model: Any, **_: Any) -> None:
            _losing.clients.discard(id(client))  # a call that never sent cannot lose a later one's answer
            fail("after", model)

        def sent(request: Any, **_: Any) -> None:
            """After moto answered (the last handler of `before-send`): the answer is lost."""
            if id(client) in _losing.clients:
                _losing.clients.discard(id(client))
                controller.wait(float(client.meta.config.read_timeout))
                raise ReadTimeoutError(endpoint_url=request.url, error="injected: the answer was lost")

        # One set of hooks per client: a client reused by a later world drops the earlier plan's.
        events = client.meta.events
        for event, hook in (("before-call", before), ("after-call", after)):
            unique_id = f"chaos-{event}"
            events.unregister(event, unique_id=unique_id)
            events.register(event, hook, unique_id=unique_id)
        events.unregister("before-send", unique_id="chaos-lost-answer")
        events.register_last("before-send", sent, unique_id="chaos-lost-answer")
        controller._clients.add(client)
        return client


class _Losing(threading.local):
    """Per thread: the clients whose next send's answer is lost (a call and its sends run on one
    thread; Step Functions runs tasks on threads of their own)."""

    def __init__(self) -> None:
        self.clients: set[int] = set()


_losing = _Losing()
