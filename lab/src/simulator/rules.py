"""EventBridge schedules as simulated time passes.

moto stores rules and never fires them. The simulator reads every enabled rule of the app template
with a `rate(...)` ScheduleExpression and Lambda targets (the `sweep-accepted` function, every 5
minutes) and, when `InProcessCloud.advance` moves the clock past a rule's next tick, invokes each
target once with a Scheduled Event, after the expiries of the jump (TTL deletion, queue retention).
A jump over many ticks fires once, at its end: nothing else runs during a jump (no poller consumes
what a tick re-sends), so the earlier ticks' effects would be what the last one does again.
EventBridge invokes a function target asynchronously, so a function error (a crash, a timeout) is
retried by Lambda: `ASYNC_ATTEMPTS` in all, Lambda's default without an EventInvokeConfig (the
minutes between them elided). EventBridge's own RetryPolicy is only for an invocation it could not
deliver.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT = {"minute": 60, "hour": 3600, "day": 86_400}
ASYNC_ATTEMPTS = 3  # an asynchronous invocation and Lambda's 2 retries of a function error


@dataclass
class ScheduledRule:
    name: str
    period: int  # seconds
    functions: tuple[str, ...]  # the targets' physical names
    next_at: float  # the next tick, on the simulated clock


def scheduled_rules(
    app_template: Mapping[str, Any], function_of: Callable[[str], str], now: float
) -> list[ScheduledRule]:
    """Every enabled `rate(...)` rule whose targets are functions (`function_of(logical id)`)."""
    rules = []
    for resource in app_template.get("Resources", {}).values():
        properties = resource.get("Properties", {})
        if resource.get("Type") != "AWS::Events::Rule" or properties.get("State", "ENABLED") != "ENABLED":
            continue
        match = _RATE.match(properties.get("ScheduleExpression", ""))
        if match is None:
            continue
        period = int(match.group(1)) * _UNIT[match.group(2).rstrip("s")]
        targets = tuple(
            function_of(target["Arn"]["Fn::GetAtt"][0])
            for target in properties.get("Targets", [])
            if "Fn::GetAtt" in target.get("Arn", {})
        )
        if targets:
            rules.append(ScheduledRule(properties["Name"], period, targets, now + period))
    return rules


def scheduled_event(rule: ScheduledRule, now: float, *, region: str, account: str) -> dict[str, Any]:
    """The event EventBridge sends a scheduled rule's target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/{rule.name}"],
        "detail": {},
    }


def due(rules: list[ScheduledRule], now: float) -> list[ScheduledRule]:
    """The rules with a tick at or before `now` (each then waits a whole period again)."""
    fired = [rule for rule in rules if rule.next_at <= now]
    for rule in fired:
        rule.next_at = now + rule.period
    return fired
