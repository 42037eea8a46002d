"""The demo's crash and its recovery: the worker of the happy path's leased step dies right after
its provider call (`Plan.crash_step`; the sample's payment), and the run finishes under the
same token with the provider's effect found, not made again: redriven by an operator (Standard),
or run again by the API's queue (Express)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ops import polling, redrive
from ops.demo.scenarios import Demo, DemoRequest
from ops.local import control
from ops.stack_outputs import function_output
from ops.story.model import Outcome as Decision
from reliability.declaration import function_name
from reliability.workflow_runs import run_of_execution

# On Express one crash is ridden out inside the execution (its FenceBusy waits fit its time limit,
# then a takeover finds the effect): for the run to need a restart, every attempt that takes the
# fence over dies too, until the FenceBusy retries give up (about 90 s: three crashes).
STANDARD_CRASHES, EXPRESS_CRASHES = 1, 10
EXPRESS_GIVES_UP_SECONDS = 300.0


def crash(demo: Demo, crash_dir: Path) -> tuple[DemoRequest, str]:
    """Arm the crash, place the happy path's request, watch the worker die after the provider call,
    stop it (on Express: watch the execution give up, then disarm)."""
    step = demo.plan.crash_step.name
    demo.section(f"a crash inside {step}, after the provider call")
    spec = demo.plan.crash_spec(EXPRESS_CRASHES if demo.express else STANDARD_CRASHES)
    control.set_crash_points(demo.out.endpoint, spec, state_dir=str(crash_dir), mode="exit")
    demo.say(f"armed {spec} (exit mode: the worker process dies, as on a real crash)")
    status = control.prewarm(demo.out.endpoint)  # the switch retired the warm workers
    function = demo.out[function_output(function_name(step))]
    pids = set(status.get("workers", {}).get(function, []))
    demo.say(f"workers warm again; {function} pid(s) {sorted(pids)}")
    placed = demo.new_request("crash + restart" if demo.express else "crash + redrive")
    demo.place(placed, demo.plan.request(demo.plan.happy.name, 1))

    if demo.express:
        return placed, _express_gives_up(demo, placed, pids)

    def crashed() -> str | None:
        # The failures of each execution as `make story` reads them (`<state>: <error>`)
        run = int(demo.story.entity_item(placed.entity_id).get("run", 1))
        return next(
            (
                str(execution["executionArn"])
                for execution in demo.story.executions(placed.entity_id, runs=run)
                if f"{step}: Runtime.ExitError" in execution["failures"]
            ),
            None,
        )

    arn = demo.wait_for(f"the crash in {step}", crashed)
    dead = sorted(pid for pid in pids if not _alive(pid))
    demo.say(f"{step} failed with Runtime.ExitError; worker pid(s) {dead or '?'} gone")
    view = demo.view(placed.entity_id).json or {}
    _expect_one_effect(demo, view, "the provider was called")
    demo.expect(view.get("status") not in demo.plan.final, f"it is {view.get('status')}, not finished")
    demo.sfn.stop_execution(
        executionArn=arn, error="Demo.Stopped", cause=f"the {step} worker crashed; redrive later"
    )
    stopped = demo.wait_for(
        "the execution to stop",
        lambda: s if (s := demo.sfn.describe_execution(executionArn=arn)["status"]) != "RUNNING" else None,
    )
    demo.say(f"operator stops the stuck execution (its retries would wait for the lease) -> {stopped}")
    return placed, arn


def _express_gives_up(demo: Demo, placed: DemoRequest, pids: set[int]) -> str:
    """Express: each attempt that takes the dead one's fence over dies too, until the execution's
    FenceBusy retries give up; then the crash is disarmed, before the queue's retry."""
    step = demo.plan.crash_step.name

    def failed() -> dict[str, Any] | None:
        run = int(demo.story.entity_item(placed.entity_id).get("run", 1))
        ended = demo.story.express_executions(placed.entity_id, run)
        return next((e for e in ended if e["status"] == "FAILED"), None)

    ended = polling.wait_for("the execution to give up", failed, timeout=EXPRESS_GIVES_UP_SECONDS)
    control.set_crash_points(demo.out.endpoint, None)  # before the queue's retry, 10 s later
    control.prewarm(demo.out.endpoint)
    dead = sorted(pid for pid in pids if not _alive(pid))
    attempts = demo.story.collect(placed.entity_id).attempts(step)
    died = sum(1 for e in attempts if e.outcome is Decision.DIED)
    demo.say(
        f"{step} died {died} time(s) (worker pid(s) {dead or '?'} gone), each takeover after "
        f"the last one's lease; the execution ended FAILED ({'; '.join(ended['failures']) or '?'}); "
        "crash injection off again"
    )
    _expect_one_effect(demo, demo.view(placed.entity_id).json or {}, "the provider was called")
    demo.expect(died >= 2, f"every takeover died too ({died} deaths): a restart is needed")
    return str(ended["executionArn"])


def redrive_crashed(demo: Demo, placed: DemoRequest, failed_arn: str) -> None:
    step = demo.plan.crash_step.name
    demo.section("redrive: the same execution token again")
    lease = _lease_expiry(demo, failed_arn)
    if lease is not None and (left := lease - time.time()) > 0:
        demo.say(f"the dead attempt holds the {step} fence for {left:.0f}s more; waiting it out")
        time.sleep(left + 0.5)
    result = redrive.redrive_execution(demo.sfn, execution_arn=failed_arn)
    demo.say(f"ops.redrive: {result.method.value} -> {result.execution_arn.rsplit(':', 1)[-1]}")
    status = demo.wait_for(
        "the redriven execution",
        lambda: (
            s
            if (s := demo.sfn.describe_execution(executionArn=result.execution_arn)["status"]) != "RUNNING"
            else None
        ),
    )
    view = demo.final_view(placed)
    happy = demo.plan.happy
    demo.expect(
        status == "SUCCEEDED" and view["status"] == happy.status, f"the redriven run ends {happy.status}"
    )
    _expect_recovered(demo, view, "by the first run")


def queue_restart(demo: Demo, placed: DemoRequest) -> None:
    """Express: the API's queue brought the message back and the worker ran the run again under the
    same token: the dead attempts' effect is found, every completed step skipped."""
    queue = demo.plan.service.queue
    demo.section(f"the {queue} queue runs it again: the same execution token")
    view = demo.final_view(placed)
    run = int(demo.story.entity_item(placed.entity_id).get("run", 1))
    executions = demo.story.express_executions(placed.entity_id, run)
    tokens = {json.loads(str(e["input"]))["token"] for e in executions}
    for execution in executions:
        demo.say(f"  execution {execution['name']}: {execution['status']}")
    demo.expect(
        len(executions) >= 2 and executions[-1]["status"] == "SUCCEEDED" and len(tokens) == 1,
        f"{len(executions)} executions of run {run} under one token ({', '.join(sorted(tokens))}), "
        f"the last SUCCEEDED: restart-with-same-token by the {queue} queue",
    )
    happy = demo.plan.happy
    demo.expect(view["status"] == happy.status, f"the restarted run ends {happy.status}")
    _expect_recovered(demo, view, "by the first execution")


def _expect_recovered(demo: Demo, view: dict[str, Any], first: str) -> None:
    """The first step skipped by its fence, the crash step's takeover finding the effect."""
    step = demo.plan.first_step
    demo.expect(
        view["steps"].get(step) == "DONE", f"{step} DONE on its fence (its effect applied once, {first})"
    )
    # The takeover asks the provider first (reconcile by entity and token): the dead attempt's
    # effect is found and recorded, so the provider is not called again.
    _expect_one_effect(demo, view, "the takeover found the effect at the provider")


def _expect_one_effect(demo: Demo, view: dict[str, Any], what: str) -> None:
    effects = demo.provider_effects(view)
    if effects is not None:
        calls, applied = effects
        demo.expect((calls, applied) == (1, 1), f"{what}: {calls} provider call, {applied} effect")


def _lease_expiry(demo: Demo, execution_arn: str) -> float | None:
    """When the crash step's fence of the execution's run stops being held (None: not held)."""
    described = demo.sfn.describe_execution(executionArn=execution_arn)
    entity_id, _ = run_of_execution(described["name"])
    token = json.loads(described["input"])["token"]
    fence = demo.story.fence(token, demo.plan.crash_step.name, entity_id)
    return float(fence["lease_expires"]) if fence.get("state") == "IN_PROGRESS" else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
