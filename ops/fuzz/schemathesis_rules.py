"""schemathesis's hooks for the orders API (`schemathesis.toml` loads this module): the business rules
under which an order the published document admits is rightly refused.

schemathesis's `positive_data_acceptance` expects an accepted answer to every request within the
document. `schemathesis.toml` lets 422 through it, and the check below narrows that 422 to three
rules the document states in prose because JSON Schema cannot say them, each verified against the
request itself; any other 422 to a request within the document fails:

- `UnknownSku`: the order names a sku the catalog does not hold (the catalog is data,
  `functions/orders/catalog_seed.json`, loaded by `make seed`, not part of the contract);
- `InvalidRequest`: the order names a sku twice (each sku once; `uniqueItems` compares whole items);
- `IdempotencyKeyReused`: the key was answered before for another order
  (draft-ietf-httpapi-idempotency-key-header: 422). A key this run saw accepted for the same order
  must be replayed, not refused; a key it did not see accepted may hold an earlier run's order (the
  record lives the client retry window), which this check cannot see, so it is let through.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import schemathesis
from pydantic import ValidationError

from orders.contract import CreateOrderRequest
from proof.catalog import load_seed
from reliability.http import HEADER, KeyRejected, idempotency_key

CREATE = ("POST", "/orders")
CATALOG = frozenset(item.sku for item in load_seed())


def _order(body: Any) -> dict[str, Any] | None:
    """The order as the function reads it (`65.0` is 65), or None when it is outside the contract."""
    try:
        return CreateOrderRequest.model_validate(body).model_dump(mode="json")
    except ValidationError:
        return None


def _repeated_skus(body: Any) -> list[str]:
    """The skus an order names more than once, when that is all that puts it outside the contract
    (the order with each sku's first line only is within it); else none."""
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return []
    first: dict[str, Any] = {}
    for item in items:
        first.setdefault(str(item.get("sku")), item)
    if _order({**body, "items": list(first.values())}) is None:
        return []
    return [sku for sku, count in Counter(str(item.get("sku")) for item in items).items() if count > 1]


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
    """A 422 to an order within the document is one of the three business rules, and holds."""

    def __init__(self) -> None:
        self._accepted: dict[str, dict[str, Any]] = {}  # key -> the order first accepted under it
        self._lock = threading.Lock()

    def after_response(self, ctx: Any, response: Any, case: Any) -> None:  # noqa: ARG002 - schemathesis's signature
        if (case.method.upper(), case.path) != CREATE:
            return
        order, key = _order(case.body), _key(case.headers)
        if 200 <= response.status_code < 300 and order is not None and key is not None:
            with self._lock:
                self._accepted.setdefault(key, order)  # idempotent: shrinking replays requests
            return
        meta = case.meta
        if response.status_code != 422 or meta is None or not meta.generation.mode.is_positive:
            return
        code = _error_code(response)
        if code == "InvalidRequest":
            if not _repeated_skus(case.body):
                raise AssertionError("422 InvalidRequest to an order the document admits, no sku repeated")
        elif order is None:
            raise AssertionError(f"422 {code} to a body the document admits and the contract refuses")
        elif code == "UnknownSku":
            if not {item["sku"] for item in order["items"]} - CATALOG:
                raise AssertionError("422 UnknownSku to an order of catalog skus only")
        elif code == "IdempotencyKeyReused":
            with self._lock:
                first = self._accepted.get(key) if key is not None else None
            if first == order:
                raise AssertionError(f"422 IdempotencyKeyReused to the order this {HEADER} was accepted for")
        else:
            raise AssertionError(f"422 {code}: no business rule refuses an order within the document so")
