"""The library's guards as they were without them, for mutants that are not one request's
condition: the transaction that binds an effect to its fence, a setting synth checks, the
workflow's Retry list, a schedule, a write's call token. Generic: each names only the library's
requests, settings and error names, so it applies to any declared service.

Each is injected where the app is composed, never by a switch in production code: a request
rewrite on the function's clients (`chaos.mutant.instrument`), or the synthesized template as synth
would emit it without the guard, edited before the world deploys it (what `infra` checks or
builds: TTLs, the Retry list, the sweeper's schedule). Four mutants bring back what issue 10
("Exactly once past the crash") fixed (`ISSUE10`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from chaos.audit import is_fence
from reliability.calltoken import CallToken

Params = dict[str, Any]
Template = dict[str, Any]

ISSUE10 = {
    1: "1: a TTL shorter than its window (a late redrive re-notifies, a late restart repeats a step)",
    2: "2: a takeover past the provider's key lifetime acts again without reconciling",
    3: "3: a transient error is not retried (TransientError not in the Retry list)",
    4: "4: a stranded ACCEPTED entity: a retry does not re-send its message, no sweeper",
    5: "5: runs not guarded: a run N+1 message starts a second run of a running or completed entity",
}
# Shorter than the 14-day redrive and DLQ windows (infra/config.py) that synth makes them outlive.
SHORT_TTL_SECONDS = 7 * 86_400


# --- the transactional effect + fence ---------------------------------------------------------
_splitting = threading.local()


def split_effect_from_fence(_function: str, operation: str, params: Params, client: Any = None) -> bool:
    """`run_atomic` as two writes: the effect first (its own transaction, with its own crash
    points), then the COMPLETED record. A condition the effect fails is reported as the one
    transaction would (the fence's entry first)."""
    if operation != "TransactWriteItems" or client is None or getattr(_splitting, "active", False):
        return False
    entries = params.get("TransactItems", [])
    fence = [e for e in entries if is_fence((e.get("Put") or {}).get("Item"))]
    effect = [e for e in entries if e not in fence]
    if not fence or not effect:
        return False
    _splitting.active = True
    try:
        client.transact_write_items(TransactItems=effect)
    except ClientError as error:
        reasons = error.response.get("CancellationReasons")
        if reasons is not None:
            error.response["CancellationReasons"] = [{"Code": "None"}, *reasons]
        raise
    finally:
        _splitting.active = False
    params["TransactItems"] = fence
    return True


# --- 1, 3, 4: what synth would emit without the guard -----------------------------------------
def short_ttls(template: Template) -> None:
    """Every fence and dedup TTL a week: shorter than the windows synth checks them against."""
    for function in _resources(template, "AWS::Lambda::Function"):
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        for name in ("FENCE_TTL_SECONDS", "DEDUP_TTL_SECONDS"):
            if name in variables:
                variables[name] = str(SHORT_TTL_SECONDS)


def no_transient_retry(template: Template) -> None:
    """The workflow's Retry lists without `TransientError`."""
    for machine in _resources(template, "AWS::StepFunctions::StateMachine"):
        definition = machine["Properties"]["DefinitionString"]
        machine["Properties"]["DefinitionString"] = _map_strings(
            definition, lambda s: s.replace(',\\"TransientError\\"', "").replace(',"TransientError"', "")
        )


def no_sweeper(template: Template) -> None:
    """No scheduled sweep of stranded ACCEPTED entities."""
    resources = template["Resources"]
    for logical in [k for k, v in resources.items() if v["Type"] == "AWS::Events::Rule"]:
        del resources[logical]


def _resources(template: Template, kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, change) for k, v in value.items()}
    return value


def both(*edits: Callable[[Template], None]) -> Callable[[Template], None]:
    def edit(template: Template) -> None:
        for one in edits:
            one(template)

    return edit


def forget_own_write(_function: str, operation: str, params: Params, _client: Any = None) -> bool:
    """The old conditional UpdateItem: it carries no token of its own call, so the SDK's resend of
    a write that landed fails its condition and is taken for another writer's (`make rerun`
    answered RerunRefused for the run it had just begun)."""
    expression = params.get("UpdateExpression", "")
    if operation != "UpdateItem" or ":attempt" not in params.get("ExpressionAttributeValues", {}):
        return False
    params["UpdateExpression"] = expression.replace(f", {CallToken.SET}", "").replace(
        f"{CallToken.SET}, ", ""
    )
    params.get("ExpressionAttributeNames", {}).pop("#attempt", None)
    params["ExpressionAttributeValues"].pop(":attempt", None)
    return True
