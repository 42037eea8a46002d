"""Crash points for the in-process cloud: record, arm, crash, and pause (for the scheduler).

`reliability.crashpoints.CrashPlan` arms points by name from the environment and crashes the
first N hits. The chaos harness needs three more things, which it adds here by subclassing (the
production module is unchanged and still costs a `None` check when off):

- a *recording* mode: every point reached, per function, in order, with its occurrence number
  (the catalogue the exhaustive single-fault run iterates over);
- a crash at one exact hit: (function, point, occurrence), e.g. the 2nd
  `after:DynamoDB.PutItem` of `charge-payment` in this schedule;
- a listener called at every point, which the interleaving scheduler uses to pause an attempt
  before each AWS call.

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

from reliability.crashpoints import CrashPlan, ErrorPoint, SimulatedCrash

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
    # failure's name, `reliability.crashpoints.TRANSPORT_ERRORS`), as `error:`/`error-after:` do.
    errors: dict[PointHit, str] = field(default_factory=dict)
    # Armed hits whose crash Lambda reports as Sandbox.Timedout (the invocation ran out of time).
    timeouts: set[str] = field(default_factory=set)
    # Armed hits where an operator stops the execution while the invocation runs (it dies too).
    stops: set[str] = field(default_factory=set)
    reached: list[PointHit] = field(default_factory=list)
    fired: list[PointHit] = field(default_factory=list)
    failed: list[tuple[PointHit, str]] = field(default_factory=list)  # injected error responses
    listener: Listener | None = None
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

    def arm_stops(self, hits: Iterable[PointHit]) -> None:
        with self._lock:
            hits = list(hits)
            self.armed.update(hits)
            self.stops.update(h.label for h in hits)

    def hit(self, function: str, point: str) -> str | None:
        """Count the hit; crash if it is armed; return the error code armed for it, if any."""
        with self._lock:
            self._counts[(function, point)] += 1
            here = PointHit(function, point, self._counts[(function, point)])
            self.reached.append(here)
            fire = here in self.armed
            if fire:
                self.armed.discard(here)
                self.fired.append(here)
            error = self.errors.pop(here, None)
            if error is not None:
                self.failed.append((here, error))
        if self.listener is not None:
            self.listener(function, point)
        if fire:
            raise SimulatedCrash(here.label)
        return error

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

        def fail(when: str, model: Any) -> None:
            call = f"{model.service_model.service_id}.{model.name}"
            code = self.controller.hit(self.function, f"{when}:{call}")
            if code is not None:
                error = ErrorPoint.parse(f"{'error' if when == 'before' else 'error-after'}:{call}:{code}")
                if error is not None:
                    raise error.failure(client, model.name, url)

        def before(model: Any, **_: Any) -> None:
            fail("before", model)

        def after(model: Any, **_: Any) -> None:
            fail("after", model)

        # One pair of hooks per client: a client reused by a later world drops the earlier plan's.
        for event, hook in (("before-call", before), ("after-call", after)):
            unique_id = f"chaos-{event}"
            client.meta.events.unregister(event, unique_id=unique_id)
            client.meta.events.register(event, hook, unique_id=unique_id)
        self.controller._clients.add(client)
        return client
