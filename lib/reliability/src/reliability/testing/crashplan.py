"""The crash plan behind reliability.testing.crashpoints: the ``RETRYSAFE_CRASH_POINTS`` syntax parsed
(crashpoints' docstring documents it), hits counted, AWS failures injected into clients.

A module of its own so that a function loads it only when the variable is set (chaos tests, the
local cloud): production never sets it, and its cold start only checks that it is unset.
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

from reliability.testing.crashpoints import (
    ENV_MODE,
    ENV_POINTS,
    ENV_SCOPE,
    ENV_STATE_DIR,
    EXIT_CODE,
    SimulatedCrash,
)

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
