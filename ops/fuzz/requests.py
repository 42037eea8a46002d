"""What a hostile client sends: hypothesis strategies for whole HTTP requests to the orders API.

Each request carries what the contract says must come back when that is certain (`expect`), so the
fuzz proves answers right, not only well-formed: a valid order under a fresh key and JSON content
type is a 202, a body nested 5,000 deep a 400, a valid order sent as text/plain a 415, and so on.
Large bodies are built from small drawn numbers ("[" * depth), so generation stays cheap.
Placeholders the runner fills at send time (hypothesis may draw the same value twice; these must
not repeat): `{fresh}` in a key is a key never sent before, `{fresh}` followed by padding `k`s
keeps the header's drawn length (`fill`), `{run}` the run's id (pooled keys),
`{known}` in a path an order accepted earlier in the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st
from pydantic import ValidationError

from orders.contract import MAX_BODY_BYTES, MAX_ITEMS, MAX_QUANTITY, CreateOrderRequest

CATALOG = tuple(f"sku-{n}" for n in range(1, 21))  # functions/orders/catalog_seed.json
JSON = "application/json"
KEY_POOL = tuple(f"{{run}}-pool-{n}" for n in range(8))  # reused: replays, 422 IdempotencyKeyReused
FRESH = "{fresh}"
RUN = "{run}"
KNOWN = "{known}"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with the stage, e.g. /local/orders
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    kind: str = ""  # what was generated, for the figures
    expect: frozenset[int] | None = None  # the only statuses the contract allows, when certain
    order: dict[str, Any] | None = field(default=None, compare=False)  # the order a 202 must show


def fill(value: str, *, fresh: str, run: str) -> str:
    """A header value with its placeholders filled; a fresh key followed by padding `k`s keeps the
    length that was drawn (a 255-character key stays 255 characters long)."""
    head, found, tail = value.replace(RUN, run).partition(FRESH)
    if not found:
        return head
    padding = len(tail) - len(tail.lstrip("k"))
    if not padding:
        return head + fresh + tail
    length = len(FRESH) + padding
    return head + (fresh.ljust(length, "k") if len(fresh) <= length else fresh[-length:]) + tail[padding:]


def _ids(min_size: int = 1, max_size: int = 64) -> st.SearchStrategy[str]:
    return st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=min_size, max_size=max_size
    )


def valid_orders() -> st.SearchStrategy[dict[str, Any]]:
    """Orders within the contract, on catalog skus (so they are accepted)."""
    lines = st.lists(st.sampled_from(CATALOG), min_size=1, max_size=5, unique=True).flatmap(
        lambda skus: st.tuples(*[st.integers(1, 5) for _ in skus]).map(
            lambda quantities: [{"sku": s, "quantity": q} for s, q in zip(skus, quantities, strict=True)]
        )
    )
    return st.fixed_dictionaries(
        {"customer_id": _ids(max_size=20), "currency": st.sampled_from(["EUR", "USD", "GBP"]), "items": lines}
    )


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=80)
    | st.sampled_from(["sku-1", "EUR", "", "\ud800"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=15), inner, max_size=5),
    max_leaves=25,
)


def _outside_contract(document: Any) -> bool:
    try:
        CreateOrderRequest.model_validate(document)
    except ValidationError:
        return True
    return False


def _mutated_orders() -> st.SearchStrategy[tuple[str, Any]]:
    """Orders with one thing wrong, each a 422 (InvalidRequest or UnknownSku) from the function or
    a 400 from the edge's model, whichever refuses first."""
    base = valid_orders()
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
            st.tuples(base, st.sampled_from(["customer_id", "currency", "items"]), _json_values).map(
                lambda t: {**t[0], t[1]: t[2]}
            ),
        ),
        st.tuples(
            st.just("item-wrong"),
            st.tuples(base, st.sampled_from(["sku", "quantity", "price"]), _json_values).map(
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


def _raw_bodies() -> st.SearchStrategy[tuple[str, bytes]]:
    """Bodies no JSON parser should survive badly: deep, long numbers, large, not UTF-8, not JSON."""
    return st.one_of(
        st.tuples(st.just("deep-json"), st.integers(100, 120_000).map(lambda n: b"[" * n)),
        st.tuples(
            st.just("deep-object"),
            st.integers(1_000, 20_000).map(
                lambda n: b'{"customer_id": ' + b'{"a": ' * n + b"1" + b"}" * n + b"}"
            ),
        ),
        st.tuples(
            st.just("long-number"),
            st.integers(4_000, 12_000).map(
                lambda n: b'{"customer_id": "c", "currency": "EUR", "items": ' + b"9" * n + b"}"
            ),
        ),
        st.tuples(
            st.just("large-body"),
            st.integers(MAX_BODY_BYTES - 64, 4 * MAX_BODY_BYTES).map(
                lambda n: json.dumps({"customer_id": "x" * n, "currency": "EUR", "items": []}).encode()
            ),
        ),
        st.tuples(
            st.just("not-utf8"),
            st.binary(min_size=1, max_size=64).map(lambda b: b'{"customer_id": "' + b + b'\xff"}'),
        ),
        st.tuples(st.just("not-json"), st.binary(max_size=64)),
        st.tuples(
            st.just("json-scalar"),
            st.sampled_from([b"null", b"1", b'"order"', b"[]", b"NaN", b"Infinity", b"1e999"]),
        ),
        st.tuples(st.just("any-json"), _json_values.map(lambda v: json.dumps(v).encode())),
    )


def _keys() -> st.SearchStrategy[tuple[str, list[str], bool]]:
    """(kind, Idempotency-Key header values, whether the key is valid and fresh)."""
    return st.one_of(
        st.just(("fresh-key", [FRESH], True)),
        st.just(("fresh-key", [FRESH], True)),
        st.just(("quoted-key", [f'"{FRESH}"'], True)),
        st.sampled_from(KEY_POOL).map(lambda k: ("pooled-key", [k], False)),
        st.just(("no-key", [], False)),
        st.sampled_from(["", " ", '""']).map(lambda k: ("empty-key", [k], False)),
        st.just(("two-keys", [FRESH, f"{FRESH}-other"], False)),
        st.just(("same-key-twice", [FRESH, f'"{FRESH}"'], True)),
        st.sampled_from(["\x00", "\t", "\x7f", "\u00e9", "\u00ff", ",", '"', "\\"]).map(
            lambda odd: ("odd-key", [f"k{odd}{FRESH}"], False)
        ),
        st.sampled_from([255, 256, 1_000]).map(
            lambda n: ("long-key", [FRESH + "k" * (n - len(FRESH))], n <= 255)
        ),
        st.just(("bad-sf-string", [f'"{FRESH}'], False)),
    )


def _content_types() -> st.SearchStrategy[tuple[str | None, bool]]:
    """(Content-Type or None, whether it is application/json)."""
    return st.one_of(
        st.just((JSON, True)),
        st.just((JSON, True)),
        st.sampled_from(["application/json; charset=utf-8", "APPLICATION/JSON"]).map(lambda c: (c, True)),
        st.sampled_from(
            [
                "text/plain",
                "application/x-www-form-urlencoded",
                "application/xml",
                "*/*",
                "application/json-patch+json",
            ]
        ).map(lambda c: (c, False)),
        st.just((None, False)),
    )


def _header_noise() -> st.SearchStrategy[list[tuple[str, str]]]:
    """Headers a client may add; values are latin-1 (what HTTP/1.1 carries) without CR/LF."""
    value = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40)
    return st.lists(
        st.tuples(
            st.sampled_from(
                ["X-Forwarded-Proto", "X-Forwarded-For", "Accept", "X-Custom", "Host", "User-Agent"]
            ),
            value,
        ),
        max_size=3,
    )


@st.composite
def post_orders(draw: st.DrawFn, stage: str) -> Request:
    """POST /orders with every combination of key, content type and body."""
    key_kind, key_values, key_ok = draw(_keys())
    content_type, is_json = draw(_content_types())
    body_kind = draw(st.sampled_from(["valid"] * 2 + ["mutated"] * 4 + ["raw"] * 4))
    order: dict[str, Any] | None = None
    if body_kind == "valid":
        order = draw(valid_orders())
        body, kind = json.dumps(order).encode(), "valid-order"
    elif body_kind == "mutated":
        kind, document = draw(_mutated_orders())
        body = json.dumps(document).encode()
    else:
        kind, body = draw(_raw_bodies())
    headers = [("Idempotency-Key", value) for value in key_values]
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    headers += draw(_header_noise())
    expect = _expected_post(key_kind, key_ok, is_json, kind)
    return Request(
        "POST",
        f"/{stage}/orders",
        tuple(headers),
        body,
        f"POST {kind} {key_kind}",
        expect,
        order if expect == {202} else None,
    )


def _expected_post(key_kind: str, key_ok: bool, is_json: bool, kind: str) -> frozenset[int] | None:
    """What the contract promises, in its order: the key (the edge and the function check it
    first), the body at the edge (JSON content types only), the content type, the body."""
    if key_kind in ("no-key",):
        return frozenset({400})
    if not key_ok:
        if key_kind == "pooled-key":
            return None  # new, a replay or a reuse with another payload: all legitimate
        # The edge only checks that the header exists; a body the edge refuses may answer first.
        return frozenset({400})
    if kind == "valid-order":
        return frozenset({202}) if is_json else frozenset({415})
    if kind in ("deep-json", "deep-object", "long-number", "large-body", "not-utf8", "not-json"):
        return frozenset({400, 415}) if not is_json else frozenset({400})
    return frozenset({400, 415, 422}) if not is_json else frozenset({400, 422})


def other_requests(stage: str) -> st.SearchStrategy[Request]:
    """Every other method and path: 404/405 from the function, 403 from the gateway outside the
    stage, 200/404 for GET /orders/{id}."""
    segment = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x24F), min_size=1, max_size=30).map(
        lambda s: quote(s, safe="")
    )
    methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO", "TRACE"])
    return st.one_of(
        st.tuples(methods.filter(lambda m: m != "POST"), st.just("/orders")).map(
            lambda t: Request(t[0], f"/{stage}{t[1]}", (), b"", f"{t[0]} /orders", _expected_other(t[0], 405))
        ),
        st.tuples(methods.filter(lambda m: m != "GET"), segment).map(
            lambda t: Request(
                t[0], f"/{stage}/orders/{t[1]}", (), b"", f"{t[0]} /orders/id", _expected_other(t[0], 405)
            )
        ),
        segment.map(
            lambda s: Request("GET", f"/{stage}/orders/{s}", (), b"", "GET unknown order", frozenset({404}))
        ),
        st.just(Request("GET", f"/{stage}/orders/{KNOWN}", (), b"", "GET known order", frozenset({200}))),
        st.tuples(methods, st.lists(segment, min_size=1, max_size=4)).map(
            lambda t: Request(
                t[0],
                f"/{stage}/x/" + "/".join(t[1]),
                (),
                b"",
                f"{t[0]} unknown path",
                _expected_other(t[0], 404),
            )
        ),
        st.tuples(methods, st.sampled_from(["/", "/prod/orders", "/nostage"])).map(
            lambda t: Request(t[0], t[1], (), b"", f"{t[0]} outside the stage", frozenset({403}))
        ),
    )


def _expected_other(method: str, status: int) -> frozenset[int]:
    # Methods API Gateway's ANY does not cover never reach the function: its 403.
    return frozenset({status}) if method not in ("FOO", "TRACE") else frozenset({403})


def requests(stage: str) -> st.SearchStrategy[Request]:
    """The whole mix: mostly POST /orders (where the contract is richest), then everything else."""
    return st.one_of(post_orders(stage), post_orders(stage), other_requests(stage))
