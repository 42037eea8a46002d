"""Clients of the service's API as people write them: some retry until they get an answer, some give
up, some come back after the idempotency key's TTL has passed.

`RetryingClient(cloud, key, body, max_attempts=N).post()` sends `POST` to the declaration's starting
route (`ops.outcomes.starting_route`) with its key and retries
with the same key on a dead function (API Gateway's 502), a 5xx or a 409 (the first attempt is still
in progress), waiting the api function's timeout between attempts on the simulated clock; after
`max_attempts` it gives up (`gave_up`, `post()` returns None) and never sends again unless told.
`retry_after_key_ttl()` lets the HTTP key's TTL (`IDEMPOTENCY_TTL_SECONDS`, from the api
function's environment) pass, with DynamoDB's TTL deletion, and posts again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ops.outcomes import starting_route
from ops.service import service

if TYPE_CHECKING:
    from simulator.cloud import ApiResponse, InProcessCloud

DIED = 502  # what API Gateway answers when the function's invocation failed


@dataclass(frozen=True)
class Attempt:
    status: int
    body: Any
    replayed: bool
    headers: tuple[tuple[str, str], ...] = ()  # the function's answer's (none when it died)


@dataclass
class RetryingClient:
    cloud: InProcessCloud
    key: str
    body: dict[str, Any]
    max_attempts: int = 8
    attempts: list[Attempt] = field(default_factory=list)
    gave_up: bool = False
    path: str = ""  # the route it posts to; "": the declared starting route's

    def post(self) -> ApiResponse | None:
        """Up to `max_attempts` sends with the same key; the final answer, or None (gave up)."""
        from simulator.cloud import LambdaError  # noqa: PLC0415 - cloud imports this module

        cloud = self.cloud
        path = self.path or starting_route(service()).path
        wait = cloud.functions[cloud.function("Api")].timeout + 1
        for attempt in range(self.max_attempts):
            if attempt:
                cloud.clock.advance(wait)
            try:
                response = cloud.api(
                    "POST", path, body=dict(self.body), headers={"Idempotency-Key": self.key}
                )
            except LambdaError:
                self.attempts.append(Attempt(DIED, None, replayed=False))
                continue
            replayed = (response.header("Idempotent-Replayed") or "").lower() == "true"
            headers = tuple(response.headers.items())
            self.attempts.append(Attempt(response.status, response.body, replayed, headers))
            if response.status != 409 and response.status < 500:
                self.gave_up = False
                return response
        self.gave_up = True
        return None

    def key_ttl(self) -> int:
        return int(self.cloud.functions[self.cloud.function("Api")].environment["IDEMPOTENCY_TTL_SECONDS"])

    def retry_after_key_ttl(self) -> ApiResponse | None:
        """Come back once the key's TTL has passed (its HTTP record deleted by TTL), same key and body."""
        self.cloud.advance(self.key_ttl() + 1)
        return self.post()
