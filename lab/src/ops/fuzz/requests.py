"""What a hostile client sends: hypothesis strategies for whole HTTP requests to the service's API.

The routes come from its declaration (`ops.outcomes`: the starting route, the entity's reading
route, every declared path and method); the bodies within its contract and the ones with one
thing wrong from its proof (`valid_bodies()`, `invalid_bodies()`, `MAX_BODY_BYTES`; the sample's
are `proof.fuzz`); keys, content types, raw bodies and the other paths and methods are the lab's.
Each request carries what the contract says must come back when that is certain (`expect`), so
the fuzz proves answers right, not only well-formed: a valid body under a fresh key and JSON
content type is the starting route's status, a body nested 5,000 deep a 400, a valid body sent as
text/plain a 415, and so on. Large bodies are built from small drawn numbers ("[" * depth), so
generation stays cheap. Placeholders the runner fills at send time (hypothesis may draw the same
value twice; these must not repeat): `{fresh}` in a key is a key never sent before, `{fresh}`
followed by padding `k`s keeps the header's drawn length (`fill`), `{run}` the run's id (pooled
keys), `{known}` in a path an entity accepted earlier in the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from ops.outcomes import entity_route, id_field, starting_route
from ops.service import proof, service
from reliability.declaration import Route, Service

JSON = "application/json"
KEY_POOL = tuple(f"{{run}}-pool-{n}" for n in range(8))  # reused: replays, 422 IdempotencyKeyReused
FRESH = "{fresh}"
RUN = "{run}"
KNOWN = "{known}"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with the stage, e.g. /local/transfers
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    kind: str = ""  # what was generated, for the figures
    expect: frozenset[int] | None = None  # the only statuses the contract allows, when certain
    # the body an accepted answer must show
    accepted: dict[str, Any] | None = field(default=None, compare=False)


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


def printable(min_size: int = 1, max_size: int = 64) -> st.SearchStrategy[str]:
    """Printable ASCII without spaces: ids as clients send them."""
    return st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=min_size, max_size=max_size
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=80)
    | st.sampled_from(["EUR", "", "\ud800"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=15), inner, max_size=5),
    max_leaves=25,
)


@cache
def _service() -> Service:
    return service()


@cache
def _bodies() -> ModuleType:
    """The service's proof module: its `valid_bodies`, `invalid_bodies` and `MAX_BODY_BYTES`."""
    module = proof(_service())
    if module is None or not hasattr(module, "valid_bodies"):
        raise LookupError(f"service {_service().name!r}: its proof module defines no valid_bodies()")
    return module


def _raw_bodies(max_body_bytes: int) -> st.SearchStrategy[tuple[str, bytes]]:
    """Bodies no JSON parser should survive badly: deep, long numbers, large, not UTF-8, not JSON."""
    return st.one_of(
        st.tuples(st.just("deep-json"), st.integers(100, 120_000).map(lambda n: b"[" * n)),
        st.tuples(
            st.just("deep-object"),
            st.integers(1_000, 20_000).map(lambda n: b'{"id": ' + b'{"a": ' * n + b"1" + b"}" * n + b"}"),
        ),
        st.tuples(
            st.just("long-number"),
            st.integers(4_000, 12_000).map(lambda n: b'{"id": "c", "count": ' + b"9" * n + b"}"),
        ),
        st.tuples(
            st.just("large-body"),
            st.integers(max_body_bytes - 64, 4 * max_body_bytes).map(
                lambda n: json.dumps({"id": "x" * n, "items": []}).encode()
            ),
        ),
        st.tuples(
            st.just("not-utf8"),
            st.binary(min_size=1, max_size=64).map(lambda b: b'{"id": "' + b + b'\xff"}'),
        ),
        st.tuples(st.just("not-json"), st.binary(max_size=64)),
        st.tuples(
            st.just("json-scalar"),
            st.sampled_from([b"null", b"1", b'"text"', b"[]", b"NaN", b"Infinity", b"1e999"]),
        ),
        st.tuples(st.just("any-json"), json_values.map(lambda v: json.dumps(v).encode())),
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
def posts(draw: st.DrawFn, stage: str) -> Request:
    """A POST to the starting route with every combination of key, content type and body."""
    route, hooks = starting_route(_service()), _bodies()
    key_kind, key_values, key_ok = draw(_keys())
    content_type, is_json = draw(_content_types())
    body_kind = draw(st.sampled_from(["valid"] * 2 + ["mutated"] * 4 + ["raw"] * 4))
    sent: dict[str, Any] | None = None
    if body_kind == "valid":
        sent = draw(hooks.valid_bodies())
        body, kind = json.dumps(sent).encode(), "valid-body"
    elif body_kind == "mutated":
        kind, document = draw(hooks.invalid_bodies())
        body = json.dumps(document).encode()
    else:
        kind, body = draw(_raw_bodies(hooks.MAX_BODY_BYTES))
    headers = [("Idempotency-Key", value) for value in key_values]
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    headers += draw(_header_noise())
    expect = _expected_post(route, key_kind, key_ok, is_json, kind)
    return Request(
        "POST",
        f"/{stage}{route.path}",
        tuple(headers),
        body,
        f"POST {kind} {key_kind}",
        expect,
        sent if expect == {route.status} else None,
    )


def _expected_post(
    route: Route, key_kind: str, key_ok: bool, is_json: bool, kind: str
) -> frozenset[int] | None:
    """What the contract promises, in its order: the key (the edge and the function check it
    first), the body at the edge (JSON content types only), the content type, the body."""
    if key_kind in ("no-key",):
        return frozenset({400})
    if not key_ok:
        if key_kind == "pooled-key":
            return None  # new, a replay or a reuse with another payload: all legitimate
        # The edge only checks that the header exists; a body the edge refuses may answer first.
        return frozenset({400})
    if kind == "valid-body":
        return frozenset({route.status}) if is_json else frozenset({415})
    if kind in ("deep-json", "deep-object", "long-number", "large-body", "not-utf8", "not-json"):
        return frozenset({400, 415}) if not is_json else frozenset({400})
    return frozenset({400, 415, 422}) if not is_json else frozenset({400, 422})


def _concrete(path: str, segment: str) -> str:
    """A declared path with each of its parameters filled with `segment`."""
    return "/".join(segment if part.startswith("{") else part for part in path.split("/"))


def other_requests(stage: str) -> st.SearchStrategy[Request]:
    """Every other method and path: 405 for a declared path's undeclared methods, 404 for an
    undeclared path (both from the function), 403 from the gateway outside the stage, 200/404 for
    a GET of the entity by its id."""
    declared = _service()
    segment = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x24F), min_size=1, max_size=30).map(
        lambda s: quote(s, safe="")
    )
    methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO", "TRACE"])
    allowed: dict[str, set[str]] = {}
    for route in declared.routes:
        allowed.setdefault(route.path, set()).add(route.method)
    undeclared = [
        _undeclared(stage, path, frozenset(ok), methods, segment) for path, ok in sorted(allowed.items())
    ]
    reading = entity_route(declared)
    reads: list[st.SearchStrategy[Request]] = []
    if reading is not None:
        reads = [
            segment.map(
                lambda s: Request(
                    "GET",
                    f"/{stage}{_concrete(reading.path, s)}",
                    (),
                    b"",
                    "GET unknown entity",
                    frozenset({404}),
                )
            ),
            st.just(
                Request(
                    "GET",
                    f"/{stage}{_concrete(reading.path, KNOWN)}",
                    (),
                    b"",
                    "GET known entity",
                    frozenset({reading.status}),
                )
            ),
        ]
    outside = ["/", f"/prod{starting_route(declared).path}", "/nostage"]
    return st.one_of(
        *undeclared,
        *reads,
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
        st.tuples(methods, st.sampled_from(outside)).map(
            lambda t: Request(t[0], t[1], (), b"", f"{t[0]} outside the stage", frozenset({403}))
        ),
    )


def _undeclared(
    stage: str,
    path: str,
    declared: frozenset[str],
    methods: st.SearchStrategy[str],
    segment: st.SearchStrategy[str],
) -> st.SearchStrategy[Request]:
    """A method the path does not declare: 405 from the function (403 from the gateway for one it
    cannot route)."""
    return st.tuples(methods.filter(lambda m: m not in declared), segment).map(
        lambda t: Request(
            t[0], f"/{stage}{_concrete(path, t[1])}", (), b"", f"{t[0]} {path}", _expected_other(t[0], 405)
        )
    )


def _expected_other(method: str, status: int) -> frozenset[int]:
    # Methods API Gateway's ANY does not cover never reach the function: its 403.
    return frozenset({status}) if method not in ("FOO", "TRACE") else frozenset({403})


def accepted_id(answer_body: Any) -> str:
    """The entity id the starting route's answer names."""
    return str(answer_body[id_field(_service())])


def read_back(stage: str, entity_id: str) -> Request | None:
    """The GET that reads entity `entity_id` back (None: the service declares no reading route)."""
    reading = entity_route(_service())
    if reading is None:
        return None
    path = f"/{stage}{_concrete(reading.path, entity_id)}"
    return Request("GET", path, (), b"", "GET accepted entity", frozenset({reading.status}))


def requests(stage: str) -> st.SearchStrategy[Request]:
    """The whole mix: mostly POSTs to the starting route (where the contract is richest), then
    everything else."""
    return st.one_of(posts(stage), posts(stage), other_requests(stage))
