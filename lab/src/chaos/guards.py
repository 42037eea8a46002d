"""The library's guards, each switched off for one declared entry: what a derived mutant
(`chaos.mutants.derived`) hands the runtime of that entry's function in place of the library's
class (`Runtime(fence_store_class=..., http_idempotency_class=...)`, as the control hands its
pass-throughs). Each subclass changes one guard for one entry and defers to the library for
everything else, so a service's new step, consumer or route gets its mutant with no code here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reliability import FenceStore
from reliability.effects import ExternalEffect
from reliability.http import HttpIdempotency, HttpResponse
from reliability.keys import Key
from reliability.record import Claim, Fence


def takeover_without_reconcile(step: str) -> type[FenceStore]:
    """A fence store whose takeover of `step` acts again without asking its reconcile what an
    earlier attempt already did (`FenceStore._reconciled`); every other step as the library's."""

    class BlindTakeover(FenceStore):
        def _reconciled(self, fence: Fence, claim: Claim, attempt_id: str, effect: ExternalEffect) -> Any:
            if fence.step.step == step:
                return None
            return super()._reconciled(fence, claim, attempt_id, effect)

    BlindTakeover.__name__ = BlindTakeover.__qualname__ = f"BlindTakeover[{step}]"
    return BlindTakeover


def payload_unhashed(route: str) -> type[HttpIdempotency]:
    """An HTTP idempotency that hashes no payload on `route` (`METHOD /path`, `Route.name`): a key
    reused with another body is answered with the first's response instead of 422."""

    class PayloadBlind(HttpIdempotency):
        def handle(
            self,
            *,
            route: str,
            key: Key,
            payload: Any,
            lambda_context: Any,
            execute: Callable[[], HttpResponse],
        ) -> HttpResponse:
            hashed = None if route == target else payload
            return super().handle(
                route=route, key=key, payload=hashed, lambda_context=lambda_context, execute=execute
            )

    target = route
    PayloadBlind.__name__ = PayloadBlind.__qualname__ = f"PayloadBlind[{route}]"
    return PayloadBlind
