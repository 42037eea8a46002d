"""The control experiment: the same runtime with fences, HTTP idempotency and consumer dedup OFF.

Switched off by injection, never by a flag: `unfenced_runtime` builds the service's `Runtime`
given fence stores that run every effect unguarded and an HTTP idempotency that executes every
request. The chaos harness builds it instead of `Runtime` for the control run; nothing in `functions/` can
select it, so no deployment can turn the protection off.

What "off" means, effect by effect (what a naive implementation would do):
- a saga step or consumer runs its effect on every attempt: no fence record, no replay;
- an external effect gets a fresh idempotency key per attempt (no fence, so nothing stable to
  derive one from), so the provider applies it again;
- an idempotent route runs every request (the entity id is still derived from the key, so the
  entity itself is not duplicated, but its message is sent again).
The control must be caught: declared effects applied twice (`double <entry>` in the report).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from ops.service import composition_root, service
from reliability import AtomicEffect, FenceStore, Outcome, RecordOn, StepId
from reliability.errors import BusinessError, EffectConditionFailed
from reliability.http import HttpIdempotency, HttpResponse
from reliability.keys import Key
from reliability.runtime import Runtime
from reliability.settings import FunctionSettings


class PassThroughFences(FenceStore):
    """A fence store that guards nothing: the effect and its writes happen on every call."""

    def run_atomic(
        self,
        step: StepId,  # noqa: ARG002
        build: Callable[[], AtomicEffect],
        *,
        record_on: RecordOn | None = None,  # noqa: ARG002 - no record anywhere
    ) -> Outcome:
        effect = build()
        self._apply(effect)
        return Outcome(result=dict(effect.result), skipped=False, fencing_token=0)

    def run_leased(
        self,
        step: StepId,  # noqa: ARG002
        *,
        attempt_id: str,  # noqa: ARG002
        lease_seconds: float,  # noqa: ARG002
        effect: Callable[[str], Mapping[str, Any] | AtomicEffect],
    ) -> Outcome:
        produced = effect(f"unfenced-{uuid.uuid4()}")
        if isinstance(produced, AtomicEffect):
            self._apply(produced)
            return Outcome(result=dict(produced.result), skipped=False, fencing_token=0)
        return Outcome(result=dict(produced), skipped=False, fencing_token=0)

    def _apply(self, effect: AtomicEffect) -> None:
        writes = effect.normalized()
        if not writes:
            return
        try:
            self._client.transact_write_items(TransactItems=[w.entry for w in writes])
        except ClientError as error:
            reasons = error.response.get("CancellationReasons") or []
            for write, reason in zip(writes, reasons, strict=False):
                if reason.get("Code") == "ConditionalCheckFailed":
                    if isinstance(write.on_condition_failed, BusinessError):
                        raise write.on_condition_failed from error
                    raise EffectConditionFailed(
                        "an unfenced write failed its condition", index=0, code="ConditionalCheckFailed"
                    ) from error
            raise


class NoHttpIdempotency(HttpIdempotency):
    """Every request executes; the key is still required and scoped (the entity's id derives from it)."""

    def handle(
        self,
        *,
        route: str,  # noqa: ARG002
        key: Key,  # noqa: ARG002
        payload: Any,  # noqa: ARG002
        lambda_context: Any,  # noqa: ARG002
        execute: Callable[[], HttpResponse],
    ) -> HttpResponse:
        return execute()


def unfenced_runtime(settings: FunctionSettings, **kwargs: Any) -> Runtime[FunctionSettings]:
    """A `Runtime` with every guard replaced by a pass-through (the control), injected at the
    composition root like any other dependency."""
    runtime: type[Runtime[FunctionSettings]] = composition_root(service()).Runtime
    return runtime(
        settings, fence_store_class=PassThroughFences, http_idempotency_class=NoHttpIdempotency, **kwargs
    )
