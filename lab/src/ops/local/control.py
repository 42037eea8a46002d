"""Talk to a running local cloud's control routes (`/_localcloud/...` on its AWS endpoint).

For the demo, chaos and e2e code that use a local cloud started elsewhere (`make local-up`):

    from ops.local import control, outputs
    endpoint = outputs.load().endpoint
    control.set_crash_points(endpoint, "after:DynamoDB.PutItem@<function>=1")
    control.status(endpoint)["workers"]     # {function name: [worker pids]}
    control.set_crash_points(endpoint, None)  # off again
    control.prewarm(endpoint)               # one warm worker per function now (after a switch)
    control.refresh(endpoint)["apis"]       # serve the REST APIs deployed now (ops.deploy calls it)

Changing crash points retires the warm workers: the next call of each function starts a fresh
worker process that reads the new RETRYSAFE_CRASH_* variables at its cold start.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def _call(
    endpoint: str, path: str, document: dict[str, Any] | None = None, *, timeout: float = 30
) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 - a local cloud's http endpoint
        f"{endpoint.rstrip('/')}/_localcloud/{path}",
        data=json.dumps(document).encode("utf-8") if document is not None else None,
        headers={"Content-Type": "application/json"},
        method="POST" if document is not None else "GET",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        return dict(json.loads(response.read()))


def status(endpoint: str) -> dict[str, Any]:
    """Workers by function, polled event source mappings, crash points in force, the cloud
    process's CPU seconds so far."""
    return _call(endpoint, "status")


def set_crash_points(
    endpoint: str, crash_points: str | None, *, state_dir: str | None = None, mode: str | None = None
) -> dict[str, Any]:
    """Switch crash injection for new workers (None: off); returns the new status."""
    return _call(
        endpoint, "crash-points", {"crash_points": crash_points, "state_dir": state_dir, "mode": mode}
    )


def prewarm(endpoint: str, *, timeout: float = 120) -> dict[str, Any]:
    """Start one worker per function now (in parallel), so the next calls skip cold starts;
    returns the status plus `prewarmed`: {function name: init error or None}."""
    return _call(endpoint, "prewarm", {}, timeout=timeout)


def refresh(endpoint: str) -> dict[str, Any]:
    """Serve the REST APIs of the stacks deployed now (after `cdk deploy` or `cdk destroy`);
    returns the status plus `apis`: {REST API id: its local URL}."""
    return _call(endpoint, "refresh", {})
