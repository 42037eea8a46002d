"""schemathesis's hooks for the service's API (`schemathesis.toml` loads this module): the business
rules under which a request the published document admits is rightly refused.

schemathesis's `positive_data_acceptance` expects an accepted answer to every request within the
document. `schemathesis.toml` lets 422 through it, and the check below narrows that 422 on the
starting route (`ops.outcomes.starting_route`) to rules the document states in prose because JSON
Schema cannot say them, each verified against the request itself; any other 422 to a request
within the document fails:

- `IdempotencyKeyReused`: the key was answered before for another body
  (draft-ietf-httpapi-idempotency-key-header: 422). A key this run saw accepted for the same body
  (as the service reads it: its proof's `within_contract`) must be replayed, not refused; a key it
  did not see accepted may hold an earlier run's entity (the record lives the client retry
  window), which this check cannot see, so it is let through;
- the service's own rules, judged by its proof's `refusal_problem(body, code)` (the sample's
  are in `proof.fuzz`).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import schemathesis

from ops.outcomes import starting_route
from ops.service import proof, service
from reliability.errors import KEY_REUSED
from reliability.http import HEADER, KeyRejected, idempotency_key

_STARTING = starting_route(service())
CREATE = (_STARTING.method, _STARTING.path)
_RULES = proof(service())


def _within_contract(body: Any) -> Any:
    """The body as the service reads it (its proof's `within_contract`; without one, as sent)."""
    hook = getattr(_RULES, "within_contract", None)
    return body if hook is None else hook(body)


def _refusal_problem(body: Any, code: str | None) -> str | None:
    """What is wrong with a 422 `code` to `body` (its proof's `refusal_problem`; without one, a
    service has no business rule of its own: every such 422 is wrong)."""
    hook = getattr(_RULES, "refusal_problem", None)
    if hook is None:
        return f"422 {code}: no business rule refuses a body within the document so"
    problem: str | None = hook(body, code)
    return problem


def _key(headers: Any) -> str | None:
    try:
        return idempotency_key(dict(headers or {}))
    except KeyRejected:
        return None


def _error_code(response: Any) -> str | None:
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


@schemathesis.check
class business_rule_refusals:  # lower case: schemathesis names a check after its class
    """A 422 to a request within the document is a business rule of the service's, and holds."""

    def __init__(self) -> None:
        self._accepted: dict[str, dict[str, Any]] = {}  # key -> the body first accepted under it
        self._lock = threading.Lock()

    def after_response(self, ctx: Any, response: Any, case: Any) -> None:  # noqa: ARG002 - schemathesis's signature
        if (case.method.upper(), case.path) != CREATE:
            return
        admitted, key = _within_contract(case.body), _key(case.headers)
        if 200 <= response.status_code < 300 and admitted is not None and key is not None:
            with self._lock:
                self._accepted.setdefault(key, admitted)  # idempotent: shrinking replays requests
            return
        meta = case.meta
        if response.status_code != 422 or meta is None or not meta.generation.mode.is_positive:
            return
        code = _error_code(response)
        if code != KEY_REUSED:
            problem = _refusal_problem(case.body, code)
            if problem is not None:
                raise AssertionError(problem)
        elif admitted is None:
            raise AssertionError(f"422 {code} to a body the document admits and the contract refuses")
        else:
            with self._lock:
                first = self._accepted.get(key) if key is not None else None
            if first == admitted:
                raise AssertionError(f"422 {code} to the body this {HEADER} was accepted for")
