"""Named crash points and injected AWS errors, for chaos tests and the local cloud. Off unless
``RETRYSAFE_CRASH_POINTS`` is set.

Syntax (comma separated entries)::

    RETRYSAFE_CRASH_POINTS="after:DynamoDB.TransactWriteItems@reserve-inventory,fence:after-effect:ChargePayment=2"
    RETRYSAFE_CRASH_POINTS="error:SQS.SendMessage:InternalError@publish-events,error-after:DynamoDB.PutItem:ReadTimeout"

    entry  := point ["@" scope] ["=" hits]
    point  := "before:<Service>.<Operation>" | "after:<Service>.<Operation>" | "fence:after-effect:<step>"
              | "error:<Service>.<Operation>[:<code>]" | "error-after:<Service>.<Operation>[:<code>]"
              (<Service> is botocore's service id, <step> the fence's step name as in the state
              machine, e.g. ChargePayment; any other name reached with ``crash_point(name)`` works too)
    code   := an AWS error code, optionally "/<HTTP status>" (default: the status AWS uses for that
              code, ``ERROR_STATUS``, else 400; no code: ``InternalFailure``, 500), or a transport
              failure: ``ReadTimeout``, ``ConnectTimeout``, ``EndpointConnectionError``,
              ``ConnectionClosed`` (``TRANSPORT_ERRORS``)
    scope  := a function name suffix; the entry only arms in a process whose
              AWS_LAMBDA_FUNCTION_NAME equals it or ends with "-<scope>" (or RETRYSAFE_CRASH_SCOPE)
    hits   := how many times the point fires before it lets calls through (default 1)

An ``error:`` point makes the call fail before it reaches AWS (nothing happened); an
``error-after:`` point lets the call through and then fails it (it happened, the caller cannot
know: a lost response). The failure is what botocore raises after its own retries gave up: the
client's modeled ``ClientError`` subclass with ``Error.Code`` and ``HTTPStatusCode``, or the
botocore transport exception. An error point is not a crash: ``RETRYSAFE_CRASH_MODE`` does not
apply to it.

Other variables: ``RETRYSAFE_CRASH_MODE`` = ``exit`` (default: ``os._exit(137)``, a real death)
or ``raise`` (``SimulatedCrash``, a BaseException that escapes ``except Exception``);
``RETRYSAFE_CRASH_STATE_DIR``: the directory of hit markers, shared by processes (each Lambda of
the local cloud runs in its own worker process). A hit takes marker ``<point>.<n>`` with
``O_CREAT|O_EXCL``, so exactly N hits crash however many processes race. Without a state dir,
hits are counted in memory.

The plan is parsed once (``active_plan()``, at cold start); when it is off, ``crash_point`` is a
``None`` check and ``instrument`` registers nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from botocore.exceptions import (
    BotoCoreError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

ENV_POINTS = "RETRYSAFE_CRASH_POINTS"
ENV_MODE = "RETRYSAFE_CRASH_MODE"
ENV_STATE_DIR = "RETRYSAFE_CRASH_STATE_DIR"
ENV_SCOPE = "RETRYSAFE_CRASH_SCOPE"
EXIT_CODE = 137

Mode = Literal["exit", "raise"]
_ENTRY = re.compile(r"^(?P<point>[^@=]+?)(?:@(?P<scope>[^=]+))?(?:=(?P<hits>\d+))?$")
_ERROR_POINT = re.compile(
    r"^(?P<when>error|error-after):(?P<call>[A-Za-z0-9 ._-]+?\.[A-Za-z0-9]+)"
    r"(?::(?P<code>[A-Za-z0-9._-]+)(?:/(?P<status>[1-5][0-9][0-9]))?)?$"
)
DEFAULT_ERROR_CODE = "InternalFailure"
# The HTTP status AWS answers each of these codes with (any other code: 400, a client error).
ERROR_STATUS: dict[str, int] = {
    "InternalFailure": 500,
    "InternalServerError": 500,
    "InternalError": 500,
    "ServiceUnavailable": 503,
    "ServiceUnavailableException": 503,
    "ServiceException": 500,
    "RequestTimeout": 408,
}
# Transport failures by the name an error point gives them; each is raised with the request URL.
TRANSPORT_ERRORS: dict[str, type[BotoCoreError]] = {
    "ReadTimeout": ReadTimeoutError,
    "ConnectTimeout": ConnectTimeoutError,
    "EndpointConnectionError": EndpointConnectionError,
    "ConnectionClosed": ConnectionClosedError,
}


@dataclass(frozen=True)
class ErrorPoint:
    """A parsed ``error:`` / ``error-after:`` point: where, and what the call fails with."""

    after: bool
    call: str  # "<ServiceId>.<Operation>"
    code: str
    status: int

    @classmethod
    def parse(cls, point: str) -> ErrorPoint | None:
        """None for a point of another kind; ValueError for a malformed error point."""
        if not point.startswith("error"):
            return None
        match = _ERROR_POINT.match(point)
        if match is None:
            raise ValueError(f"bad crash point entry {point!r} (error:<Service>.<Operation>[:<code>])")
        code = match["code"] or DEFAULT_ERROR_CODE
        status = int(match["status"]) if match["status"] else ERROR_STATUS.get(code, 400)
        return cls(after=match["when"] == "error-after", call=match["call"], code=code, status=status)

    def failure(self, client: Any, operation: str, url: str) -> Exception:
        """The exception botocore would raise for this failure on ``client``."""
        transport = TRANSPORT_ERRORS.get(self.code)
        if transport is not None:
            failure: Exception = transport(endpoint_url=url, error=f"injected {self.code}")
            return failure
        parsed = {
            "Error": {"Code": self.code, "Message": f"injected {self.code} ({self.status})"},
            "ResponseMetadata": {"HTTPStatusCode": self.status, "HTTPHeaders": {}, "RetryAttempts": 0},
        }
        error: Exception = client.exceptions.from_code(self.code)(parsed, operation)
        return error


class SimulatedCrash(BaseException):
    """A simulated process death; BaseException so ``except Exception`` cannot swallow it."""

    def __init__(self, point: str) -> None:
        super().__init__(f"simulated crash at {point}")
        self.point = point


@dataclass
class CrashPlan:
    points: dict[str, int]
    mode: Mode = "raise"
    state_dir: str | None = None
    # Scoped entries of a plan parsed without a function name (one plan for a whole in-process
    # cloud): armed per function by ``for_function``. (point, scope, hits)
    scoped: tuple[tuple[str, str, int], ...] = ()
    _memory: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def parse(
        cls,
        spec: str,
        *,
        mode: Mode = "raise",
        state_dir: str | None = None,
        function_name: str | None = None,
    ) -> CrashPlan:
        """Parse ``spec``. With ``function_name``, entries scoped to other functions are dropped;
        without it (one plan for every function of an in-process cloud), they wait in ``scoped``
        until ``for_function`` arms them for the function they name."""
        points: dict[str, int] = {}
        scoped: list[tuple[str, str, int]] = []
        for raw in spec.split(","):
            entry = raw.strip()
            if not entry:
                continue
            match = _ENTRY.match(entry)
            if match is None:
                raise ValueError(f"bad crash point entry {entry!r}")
            point, scope, hits = match["point"].strip(), match["scope"], int(match["hits"] or 1)
            ErrorPoint.parse(point)  # a malformed error point fails here, not at the call
            if scope and function_name is None:
                scoped.append((point, scope, hits))
            elif not scope or _in_scope(scope, function_name):
                points[point] = hits
        return cls(points=points, mode=mode, state_dir=state_dir, scoped=tuple(scoped))

    def for_function(self, function_name: str | None) -> CrashPlan:
        """This plan as ``function_name`` sees it: its scoped entries armed, others' left out.
        Hit counts are shared with this plan, so N hits fire N times across all functions."""
        if not self.scoped:
            return self
        points = dict(self.points)
        for point, scope, hits in self.scoped:
            if _in_scope(scope, function_name):
                points[point] = hits
        return CrashPlan(
            points=points, mode=self.mode, state_dir=self.state_dir, _memory=self._memory, _lock=self._lock
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CrashPlan | None:
        spec = environ.get(ENV_POINTS, "").strip()
        if not spec:
            return None
        mode = environ.get(ENV_MODE, "exit")
        if mode not in ("exit", "raise"):
            raise ValueError(f"{ENV_MODE} must be exit or raise, got {mode!r}")
        function_name = environ.get(ENV_SCOPE) or environ.get("AWS_LAMBDA_FUNCTION_NAME")
        plan = cls.parse(
            spec,
            mode="exit" if mode == "exit" else "raise",
            state_dir=environ.get(ENV_STATE_DIR) or None,
            function_name=function_name,
        )
        return plan if plan.points else None

    def armed(self, point: str) -> bool:
        return point in self.points

    def _take_hit(self, point: str) -> bool:
        """True when this hit is one of the first N of ``point`` (across processes with a state dir)."""
        limit = self.points.get(point, 0)
        if limit <= 0:
            return False
        if self.state_dir is None:
            with self._lock:
                taken = self._memory.get(point, 0)
                if taken >= limit:
                    return False
                self._memory[point] = taken + 1
                return True
        os.makedirs(self.state_dir, exist_ok=True)
        slug = hashlib.sha256(point.encode()).hexdigest()[:16]
        for n in range(1, limit + 1):
            marker = os.path.join(self.state_dir, f"{slug}.{n}")
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                continue
            os.write(fd, point.encode())
            os.close(fd)
            return True
        return False

    def hit(self, point: str) -> None:
        """Crash here if ``point`` is armed and has hits left."""
        if not self._take_hit(point):
            return
        if self.mode == "exit":
            # A real death: no cleanup, no finally blocks. Say where, so the local cloud's log shows it.
            sys.stdout.flush()
            sys.stderr.write(f"retrysafe: simulated crash at {point}\n")
            sys.stderr.flush()
            os._exit(EXIT_CODE)
        raise SimulatedCrash(point)

    def fail(self, client: Any, model: Any, url: str, *, after: bool) -> None:
        """Raise the failure of the first armed error point of this call that has hits left."""
        call = f"{model.service_model.service_id}.{model.name}"
        for point in self.points:
            error = ErrorPoint.parse(point)
            if error is not None and error.after == after and error.call == call and self._take_hit(point):
                raise error.failure(client, model.name, url)

    def instrument(self, client: Any) -> Any:
        """Register before-call/after-call hooks on a botocore client for the armed AWS points."""
        if not any(p.startswith(("before:", "after:", "error")) for p in self.points):
            return client
        url = str(client.meta.endpoint_url)

        def before(model: Any, **_: Any) -> None:
            self.hit(f"before:{model.service_model.service_id}.{model.name}")
            self.fail(client, model, url, after=False)

        def after(model: Any, **_: Any) -> None:
            self.hit(f"after:{model.service_model.service_id}.{model.name}")
            self.fail(client, model, url, after=True)

        client.meta.events.register("before-call", before, unique_id=f"retrysafe-crash-before-{id(self)}")
        client.meta.events.register("after-call", after, unique_id=f"retrysafe-crash-after-{id(self)}")
        return client


def _in_scope(scope: str, function_name: str | None) -> bool:
    if not function_name:
        return False
    return function_name == scope or function_name.endswith(f"-{scope}")


_PLAN: CrashPlan | None = CrashPlan.from_env(os.environ)


def active_plan() -> CrashPlan | None:
    """The plan parsed from the environment at cold start (None when off)."""
    return _PLAN


def crash_point(name: str, plan: CrashPlan | None = None) -> None:
    """An explicit crash point; ``plan`` defaults to the cold-start plan. Zero cost when off."""
    active = plan if plan is not None else _PLAN
    if active is not None:
        active.hit(name)


def instrument(client: Any, plan: CrashPlan | None = None) -> Any:
    """Instrument ``client`` with ``plan`` (default: the cold-start plan); returns it unchanged when off."""
    active = plan if plan is not None else _PLAN
    return client if active is None else active.instrument(client)
