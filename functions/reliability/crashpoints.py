"""Named crash points, for chaos tests and the local cloud. Off unless ``RETRYSAFE_CRASH_POINTS`` is set.

Syntax (comma separated entries)::

    RETRYSAFE_CRASH_POINTS="after:DynamoDB.TransactWriteItems@reserve-inventory,fence:after-effect:ChargePayment=2"

    entry  := point ["@" scope] ["=" hits]
    point  := "before:<Service>.<Operation>" | "after:<Service>.<Operation>" | "fence:after-effect:<step>"
              (<Service> is botocore's service id, <step> the fence's step name as in the state
              machine, e.g. ChargePayment; any other name reached with ``crash_point(name)`` works too)
    scope  := a function name suffix; the entry only arms in a process whose
              AWS_LAMBDA_FUNCTION_NAME equals it or ends with "-<scope>" (or RETRYSAFE_CRASH_SCOPE)
    hits   := how many times the point crashes before it lets calls through (default 1)

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

ENV_POINTS = "RETRYSAFE_CRASH_POINTS"
ENV_MODE = "RETRYSAFE_CRASH_MODE"
ENV_STATE_DIR = "RETRYSAFE_CRASH_STATE_DIR"
ENV_SCOPE = "RETRYSAFE_CRASH_SCOPE"
EXIT_CODE = 137

Mode = Literal["exit", "raise"]
_ENTRY = re.compile(r"^(?P<point>[^@=]+?)(?:@(?P<scope>[^=]+))?(?:=(?P<hits>\d+))?$")


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
        points: dict[str, int] = {}
        for raw in spec.split(","):
            entry = raw.strip()
            if not entry:
                continue
            match = _ENTRY.match(entry)
            if match is None:
                raise ValueError(f"bad crash point entry {entry!r}")
            scope = match["scope"]
            if scope and not _in_scope(scope, function_name):
                continue
            points[match["point"].strip()] = int(match["hits"] or 1)
        return cls(points=points, mode=mode, state_dir=state_dir)

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

    def instrument(self, client: Any) -> Any:
        """Register before-call/after-call hooks on a botocore client for the armed AWS points."""
        if not any(p.startswith(("before:", "after:")) for p in self.points):
            return client

        def before(model: Any, **_: Any) -> None:
            self.hit(f"before:{model.service_model.service_id}.{model.name}")

        def after(model: Any, **_: Any) -> None:
            self.hit(f"after:{model.service_model.service_id}.{model.name}")

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
