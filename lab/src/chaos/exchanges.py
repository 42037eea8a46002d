"""The chaos clouds' HTTP client: a POST to the service's starting route (`ops.outcomes.
starting_route`: its one idempotent POST) as a well-behaved client retries it
(`simulator.clients.RetryingClient`), every attempt recorded as an `Exchange`, and what the answers
must satisfy (the same answer on every replay; the OpenAPI contract)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ops.outcomes import id_field, starting_route
from ops.service import service
from simulator.clients import RetryingClient
from simulator.cloud import ApiResponse, InProcessCloud

if TYPE_CHECKING:
    from chaos.recovery import Recovery

STARTING_PATH = starting_route(service()).path
ID_FIELD = id_field(service())


@dataclass(frozen=True)
class Exchange:
    """One HTTP attempt as the client saw it."""

    key: str
    status: int  # 502 when the function died
    body: Any
    replayed: bool
    request: Any = None  # the request body sent (None: the one the key was first used with)
    headers: tuple[tuple[str, str], ...] = ()  # the function's answer's (none when it died)
    caller: str = ""  # the IAM principal that signed it ("": the schedule's own, unsigned clients)


def contract_violations(exchanges: Iterable[Exchange], *, stage: str) -> list[str]:
    """Every answer the api function gave (2xx, 4xx, 409, 422, 503) is one the OpenAPI document
    lists for the starting route, in its shape (`ops.fuzz.oracle`, the fuzz's oracle). A 502 from a
    function that died is API Gateway's, not the function's: not judged here."""
    from ops.fuzz.oracle import Answer, Tally  # noqa: PLC0415 - jsonschema only where judged
    from ops.fuzz.requests import Request  # noqa: PLC0415

    tally = Tally()
    for exchange in exchanges:
        if not exchange.headers:
            continue
        body = b"" if exchange.body is None else json.dumps(exchange.body).encode()
        request = Request(
            "POST", f"/{stage}{STARTING_PATH}", (("Idempotency-Key", exchange.key),), kind="chaos"
        )
        _oracle(stage).check(request, Answer(exchange.status, exchange.headers, body), tally)
    return [f"contract: {line}" for line in tally.problems if not line.startswith("five_xx")]


@functools.cache
def _oracle(stage: str) -> Any:
    from ops.fuzz.oracle import Oracle  # noqa: PLC0415 - reads the OpenAPI document once

    return Oracle(stage)


class HttpClient(InProcessCloud):
    """What `ChaosCloud` does as the API's client (a mixin: `ChaosCloud` sets the state)."""

    exchanges: list[Exchange]
    recovery: Recovery

    def post_request(self, key: str, body: Mapping[str, Any], *, max_attempts: int = 8) -> ApiResponse | None:
        """POST to the starting route as a well-behaved client (`simulator.clients.RetryingClient`),
        every attempt recorded as an `Exchange`; None if it never got an answer."""
        client = RetryingClient(self, key, dict(body), max_attempts=max_attempts, path=STARTING_PATH)
        response = client.post()
        self.recovery.client_retries += len(client.attempts) - 1
        self.exchanges.extend(
            Exchange(key, a.status, a.body, a.replayed, request=dict(body), headers=a.headers)
            for a in client.attempts
        )
        return response

    def http_violations(self) -> list[str]:
        """Every later 2xx answer for a caller's key (a replay, or a re-execution after the first
        attempt's in-progress window passed) must equal the first; and a retry with the same key and
        body as an answered entity's gets that entity: never a 4xx (but 409 while an attempt is in
        progress), however late it comes and whatever the world became meanwhile."""
        first: dict[tuple[str, str], Exchange] = {}
        violations = []
        for exchange in self.exchanges:
            answered = first.get((exchange.caller, exchange.key))
            if exchange.status >= 300:
                retried = answered is not None and exchange.request in (None, answered.request)
                if retried and 400 <= exchange.status < 500 and exchange.status != 409 and answered:
                    violations.append(
                        f"key {exchange.key}: a retry with the same body of {service().entity.name} "
                        f"{answered.body.get(ID_FIELD) if isinstance(answered.body, dict) else '?'} got "
                        f"{exchange.status} {exchange.body}, not its {service().entity.name}"
                    )
                continue
            changed = answered is not None and exchange.request not in (None, answered.request)
            if changed and answered is not None and answered.request is not None:
                violations.append(
                    f"key {exchange.key}: a different body got {exchange.status} after the key was "
                    f"answered {answered.status} (a reused key with another payload must be 422)"
                )
                continue
            # The first 2xx the client sees may itself be a replay (the function died after
            # storing its response): then the original never reached anyone, and every answer
            # must equal the stored one.
            original = first.setdefault((exchange.caller, exchange.key), exchange)
            if original is exchange:
                continue
            if (exchange.status, exchange.body) != (original.status, original.body):
                violations.append(
                    f"key {exchange.key}: a later answer {exchange.status} {exchange.body} differs from "
                    f"the first {original.status} {original.body}"
                )
        return violations

    def contract_violations(self) -> list[str]:
        return contract_violations(
            self.exchanges, stage=self.functions[self.function("Api")].environment["STAGE"]
        )

    def replays(self) -> int:
        return sum(1 for exchange in self.exchanges if exchange.replayed)
