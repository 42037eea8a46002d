"""Named crash points and injected AWS errors, for chaos tests and the local cloud. Off unless
``RETRYSAFE_CRASH_POINTS`` is set.

Syntax (comma separated entries)::

    RETRYSAFE_CRASH_POINTS="after:DynamoDB.TransactWriteItems@hold-items,fence:after-effect:Pay=2"
    RETRYSAFE_CRASH_POINTS="error:SQS.SendMessage:InternalError@announce,error-after:DynamoDB.PutItem:ReadTimeout"

    entry  := point ["@" scope] ["=" hits]
    point  := "before:<Service>.<Operation>" | "after:<Service>.<Operation>" | "fence:after-effect:<step>"
              | "error:<Service>.<Operation>[:<code>]" | "error-after:<Service>.<Operation>[:<code>]"
              (<Service> is botocore's service id, <step> the fence's step name as in the state
              machine, e.g. Pay; any other name reached with ``crash_point(name)`` works too)
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

The hook points production code calls (``crash_point``, ``instrument``) and the cold-start plan
(``active_plan``) are ``reliability.faults``; this module holds the variables and the crash, and
re-exports the plan's machinery (``reliability.testing.crashplan``) for the tools that arm plans.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reliability.faults import ENV_POINTS

if TYPE_CHECKING:
    from reliability.testing.crashplan import (
        DEFAULT_ERROR_CODE,
        ERROR_STATUS,
        TRANSPORT_ERRORS,
        CrashPlan,
        ErrorPoint,
        Mode,
    )

ENV_MODE = "RETRYSAFE_CRASH_MODE"
ENV_STATE_DIR = "RETRYSAFE_CRASH_STATE_DIR"
ENV_SCOPE = "RETRYSAFE_CRASH_SCOPE"
EXIT_CODE = 137


class SimulatedCrash(BaseException):
    """A simulated process death; BaseException so ``except Exception`` cannot swallow it."""

    def __init__(self, point: str) -> None:
        super().__init__(f"simulated crash at {point}")
        self.point = point


# Defined in reliability.testing.crashplan (which imports the names above), loaded on first use.
_PLAN_NAMES = frozenset(
    {"DEFAULT_ERROR_CODE", "ERROR_STATUS", "TRANSPORT_ERRORS", "CrashPlan", "ErrorPoint", "Mode"}
)
__all__ = [
    "DEFAULT_ERROR_CODE",
    "ENV_MODE",
    "ENV_POINTS",
    "ENV_SCOPE",
    "ENV_STATE_DIR",
    "ERROR_STATUS",
    "EXIT_CODE",
    "TRANSPORT_ERRORS",
    "CrashPlan",
    "ErrorPoint",
    "Mode",
    "SimulatedCrash",
]


def __getattr__(name: str) -> Any:
    if name not in _PLAN_NAMES:
        raise AttributeError(f"module 'reliability.testing.crashpoints' has no attribute {name!r}")
    return getattr(importlib.import_module("reliability.testing.crashplan"), name)
