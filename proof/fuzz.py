"""The sample's bodies for the API fuzz (`ops.fuzz`): orders within its contract on catalog skus
(so they are accepted), and orders with one thing wrong (each refused: a 422 InvalidRequest or
UnknownSku from the function, or a 400 from the edge's model, whichever refuses first). The rest
of the hostile mix (keys, content types, raw bodies, other paths and methods) is the lab's.

For schemathesis (`ops.fuzz.schemathesis_rules`): `within_contract(body)`, the order as the
function reads it, and `refusal_problem(body, code)`, what is wrong with a 422 to an order the
published document admits (None: one of its business rules refused it, rightly):

- `UnknownSku`: the order names a sku the catalog does not hold (the catalog is data,
  `functions/orders/catalog_seed.json`, loaded by `make seed`, not part of the contract);
- `InvalidRequest`: the order names a sku twice (each sku once; `uniqueItems` compares whole items).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import strategies as st

from ops.fuzz.requests import json_values, printable
from orders.contract import MAX_BODY_BYTES, MAX_ITEMS, MAX_QUANTITY, CreateOrderRequest
from proof.catalog import load_seed
from reliability.fields import ShapeError

__all__ = ["MAX_BODY_BYTES", "invalid_bodies", "refusal_problem", "valid_bodies", "within_contract"]

CATALOG = tuple(item.sku for item in load_seed())


def valid_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """Orders within the contract, on catalog skus (so they are accepted)."""
    lines = st.lists(st.sampled_from(CATALOG), min_size=1, max_size=5, unique=True).flatmap(
        lambda skus: st.tuples(*[st.integers(1, 5) for _ in skus]).map(
            lambda quantities: [{"sku": s, "quantity": q} for s, q in zip(skus, quantities, strict=True)]
        )
    )
    return st.fixed_dictionaries(
        {
            "customer_id": printable(max_size=20),
            "currency": st.sampled_from(["EUR", "USD", "GBP"]),
            "items": lines,
        }
    )


def _outside_contract(document: Any) -> bool:
    try:
        CreateOrderRequest.model_validate(document)
    except ShapeError:
        return True
    return False


def invalid_bodies() -> st.SearchStrategy[tuple[str, Any]]:
    """(what is wrong, the order): each outside the contract or naming a sku the catalog lacks."""
    base = valid_bodies()
    unknown = st.tuples(
        st.just("unknown-sku"), base.map(lambda o: {**o, "items": [{"sku": "sku-404", "quantity": 1}]})
    )
    return unknown | st.one_of(
        st.tuples(
            st.just("repeated-sku"),
            base.map(lambda o: {**o, "items": [{"sku": "sku-1", "quantity": 60}] * 2}),
        ),
        st.tuples(
            st.just("field-wrong"),
            st.tuples(base, st.sampled_from(["customer_id", "currency", "items"]), json_values).map(
                lambda t: {**t[0], t[1]: t[2]}
            ),
        ),
        st.tuples(
            st.just("item-wrong"),
            st.tuples(base, st.sampled_from(["sku", "quantity", "price"]), json_values).map(
                lambda t: {**t[0], "items": [{**t[0]["items"][0], t[1]: t[2]}]}
            ),
        ),
        st.tuples(
            st.just("bounds"),
            st.tuples(base, st.sampled_from([0, -1, MAX_QUANTITY + 1, 2**63])).map(
                lambda t: {**t[0], "items": [{"sku": "sku-2", "quantity": t[1]}]}
            ),
        ),
        st.tuples(
            st.just("too-many-items"),
            base.map(
                lambda o: {**o, "items": [{"sku": f"x{n}", "quantity": 1} for n in range(MAX_ITEMS + 1)]}
            ),
        ),
        st.tuples(st.just("extra-field"), base.map(lambda o: {**o, "coupon": "FREE"})),
        st.tuples(
            st.just("missing-field"), base.map(lambda o: {k: v for k, v in o.items() if k != "currency"})
        ),
        st.tuples(st.just("non-ascii-id"), base.map(lambda o: {**o, "customer_id": "caf\u00e9"})),
    ).filter(lambda mutated: _outside_contract(mutated[1]))


def within_contract(body: Any) -> dict[str, Any] | None:
    """The order as the function reads it (`65.0` is 65), or None when it is outside the contract."""
    try:
        return CreateOrderRequest.model_validate(body).model_dump(mode="json")
    except ShapeError:
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
    if within_contract({**body, "items": list(first.values())}) is None:
        return []
    return [sku for sku, count in Counter(str(item.get("sku")) for item in items).items() if count > 1]


def refusal_problem(body: Any, code: str | None) -> str | None:
    """What is wrong with a 422 `code` to `body`, an order the published document admits."""
    if code == "InvalidRequest":
        return (
            None
            if _repeated_skus(body)
            else "422 InvalidRequest to an order the document admits, no sku repeated"
        )
    order = within_contract(body)
    if order is None:
        return f"422 {code} to a body the document admits and the contract refuses"
    if code == "UnknownSku":
        unknown = {item["sku"] for item in order["items"]} - set(CATALOG)
        return None if unknown else "422 UnknownSku to an order of catalog skus only"
    return f"422 {code}: no business rule refuses an order within the document so"
