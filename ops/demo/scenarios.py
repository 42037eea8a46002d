"""The demo's scenarios against one local cloud: each acts as a client would and checks what a
client can see; what the service did is read as the ops tools read it (see `ops.demo`)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from localcloud import control
from localcloud.outputs import Outputs
from ops import polling, redrive
from ops.api_client import ApiClient, ApiResponse
from ops.invariants import Report, Stores, check
from ops.lifecycle import target_of
from ops.seed import seed_service
from ops.story import html as story_html
from ops.story.collect import Collector
from ops.story.logs import LocalLogFiles
from ops.story.model import Outcome
from orders.items import catalog_key

T = TypeVar("T")

FINAL = frozenset({"COMPLETED", "FAILED"})
WAIT_SECONDS = 120.0  # any single wait; a healthy local cloud needs a fraction of it
# What a story calls a duplicate the worker or a consumer recognised.
DEDUPLICATED = frozenset({Outcome.DEDUP_HIT, Outcome.DEDUPLICATED})
CRASH_SPEC = "fence:after-effect:ChargePayment@charge-payment=1"
# On Express one crash is ridden out inside the execution (its FenceBusy waits fit its time limit,
# then a takeover finds the charge): for the run to need a restart, every attempt that takes the
# fence over dies too, until the FenceBusy retries give up (about 90 s: three crashes).
EXPRESS_CRASH_SPEC = "fence:after-effect:ChargePayment@charge-payment=10"
EXPRESS_GIVES_UP_SECONDS = 300.0


class DemoError(RuntimeError):
    """A scenario did not behave as the service promises (or the local cloud did not answer)."""


@dataclass
class DemoOrder:
    label: str
    key: str
    order_id: str = ""
    replays: int = 0


class Demo:
    """The scenarios, against one local cloud's outputs: HTTP for the API, and what the service
    did read as the ops tools read it (`ops.story`'s collector: orders, executions, fences, the
    decisions in the function logs; `ops.invariants`)."""

    def __init__(self, out: Outputs, *, state_dir: Path, console: IO[str] = sys.stdout) -> None:
        if not out.api_url:
            raise DemoError("the local cloud serves no REST API")
        self.out = out
        self.console = console
        self.started = time.monotonic()
        self.run_id = uuid.uuid4().hex[:8]
        self.api = ApiClient(out.api_url)
        target = target_of(out)
        self.client = target.client
        self.ddb = target.client("dynamodb")
        self.sqs = target.client("sqs")
        self.sfn = target.client("stepfunctions")
        self.story = Collector(
            outputs=out.outputs, client=target.client, logs=LocalLogFiles(state_dir / "logs")
        )
        self.express = self.story.workflow().express  # Express: the worker runs and waits, the queue retries
        self.orders: list[DemoOrder] = []
        self.problems: list[str] = []

    # -- output -------------------------------------------------------------------------------
    def say(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        self.console.write(f"[{elapsed:5.1f}s] {message}\n")
        self.console.flush()

    def section(self, title: str) -> None:
        self.console.write(f"\n== {title}\n")
        self.console.flush()

    def expect(self, condition: bool, what: str) -> None:
        """A promise of the service, checked as a client sees it; a broken one is reported."""
        self.say(f"  {'ok' if condition else 'UNEXPECTED'}: {what}")
        if not condition:
            self.problems.append(what)

    # -- helpers ------------------------------------------------------------------------------
    def wait_for(self, what: str, probe: Callable[[], T | None]) -> T:
        return polling.wait_for(what, probe, timeout=WAIT_SECONDS)

    def new_order(self, label: str) -> DemoOrder:
        order = DemoOrder(label=label, key=f"demo-{self.run_id}-{len(self.orders) + 1}")
        self.orders.append(order)
        return order

    def place(self, order: DemoOrder, body: dict[str, Any]) -> ApiResponse:
        response = self.api.post_order(body, key=order.key)
        if response.status != 202 or not isinstance(response.json, dict):
            raise DemoError(f"POST /orders answered {response.status}: {response.text[:300]}")
        order.order_id = str(response.json["order_id"])
        self.say(f"POST /orders (Idempotency-Key {order.key}) -> 202 {order.order_id}")
        return response

    def final_view(self, order: DemoOrder, url: str | None = None) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            response = self.api.request("GET", url) if url else self.api.get_order(order.order_id)
            view = response.json if response.status == 200 else None
            return view if isinstance(view, dict) and view.get("status") in FINAL else None

        view = self.wait_for(f"{order.order_id} to finish", probe)
        steps = ", ".join(f"{name} {status}" for name, status in view["steps"].items())
        self.say(f"GET {order.order_id} -> {view['status']} ({steps})")
        return view

    def stock(self, sku: str) -> int:
        item = self.ddb.get_item(
            TableName=self.out["InventoryTableName"], Key=catalog_key(sku), ConsistentRead=True
        )["Item"]
        return int(item["stock"]["N"])

    def dedup_hits(self, order_id: str) -> int:
        """Duplicate messages and events of the order that the worker and consumers recognised."""
        return sum(1 for entry in self.story.collect(order_id).entries if entry.outcome in DEDUPLICATED)

    # -- scenarios ----------------------------------------------------------------------------
    def seed(self) -> None:
        self.section("catalog")
        written = seed_service(self.ddb, self.out.outputs)
        self.say(f"seeded {written} sku(s) (skus already there are kept)")

    def happy_path(self) -> DemoOrder:
        self.section("an order, and the same request again (a client retrying)")
        order = self.new_order("order + 4 retries")
        body = {"customer_id": "customer-demo", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 2}]}
        first = self.place(order, body)
        status_url = str(first.json["status_url"])
        self.say(f"  status_url {status_url}")
        for _ in range(4):
            again = self.api.post_order(body, key=order.key)
            if again.header("Idempotent-Replayed") == "true" and again.json == first.json:
                order.replays += 1
        self.expect(
            order.replays == 4,
            f"4 more sends -> {order.replays} identical replays (Idempotent-Replayed: true)",
        )
        conflict = self.api.post_order({**body, "items": [{"sku": "sku-1", "quantity": 3}]}, key=order.key)
        self.expect(
            conflict.status == 422 and _code(conflict) == "IdempotencyKeyReused",
            f"same key, another body -> {conflict.status} {_code(conflict)}",
        )
        missing = self.api.post_order(body, key=None)
        self.expect(
            missing.status == 400 and _code(missing) == "IdempotencyKeyMissing",
            f"no Idempotency-Key -> {missing.status} {_code(missing)}",
        )
        malformed = self.api.post_order("{not json", key=f"demo-{self.run_id}-malformed")
        # The API's body model answers before the function (InvalidRequest); without one, the
        # function says MalformedBody. Either way a 400 with a JSON error body.
        self.expect(
            malformed.status == 400 and _code(malformed) in {"InvalidRequest", "MalformedBody"},
            f"a body that is not JSON -> {malformed.status} {_code(malformed)}",
        )
        view = self.final_view(order, status_url)
        self.expect(view["status"] == "COMPLETED", "the order completes (followed through its status_url)")
        self.expect(len(view["charges"]) == 1, f"{len(view['charges'])} charge")
        return order

    def declined(self) -> DemoOrder:
        self.section("a declined payment: the saga compensates")
        order = self.new_order("declined payment")
        sku = "sku-7"  # no other demo order takes this sku, so its stock tells the story
        before = self.stock(sku)
        self.place(
            order,
            {"customer_id": "declined-demo", "currency": "EUR", "items": [{"sku": sku, "quantity": 3}]},
        )
        view = self.final_view(order)
        self.expect(view["status"] == "FAILED", "the order ends FAILED")
        self.expect(
            view["steps"].get("ChargePayment") == "FAILED"
            and view["steps"].get("ReserveInventory") == "COMPENSATED",
            "ChargePayment FAILED (declined), ReserveInventory COMPENSATED by ReleaseInventory",
        )
        after = self.stock(sku)
        self.expect(after == before, f"{sku} stock back where it was ({before} -> {after})")
        return order

    def crash(self, crash_dir: Path) -> tuple[DemoOrder, str]:
        """Arm the crash, place an order, watch the worker die after the provider call, stop it
        (on Express: watch the execution give up, then disarm)."""
        self.section("a crash inside ChargePayment, after the provider call")
        spec = EXPRESS_CRASH_SPEC if self.express else CRASH_SPEC
        status = control.set_crash_points(self.out.endpoint, spec, state_dir=str(crash_dir), mode="exit")
        self.say(f"armed {spec} (exit mode: the worker process dies, as on a real crash)")
        status = control.prewarm(self.out.endpoint)  # the switch retired the warm workers
        charge_fn = self.out["ChargePaymentFunctionName"]
        pids = set(status.get("workers", {}).get(charge_fn, []))
        self.say(f"workers warm again; {charge_fn} pid(s) {sorted(pids)}")
        order = self.new_order("crash + restart" if self.express else "crash + redrive")
        self.place(
            order,
            {"customer_id": "customer-demo", "currency": "EUR", "items": [{"sku": "sku-3", "quantity": 1}]},
        )

        if self.express:
            return order, self._express_gives_up(order, pids)

        def crashed() -> str | None:
            # The failures of each execution as `make story` reads them (`<state>: <error>`)
            run = int(self.story.order(order.order_id).get("run", 1))
            return next(
                (
                    str(execution["executionArn"])
                    for execution in self.story.executions(order.order_id, runs=run)
                    if "ChargePayment: Runtime.ExitError" in execution["failures"]
                ),
                None,
            )

        arn = self.wait_for("the crash in ChargePayment", crashed)
        dead = sorted(pid for pid in pids if not _alive(pid))
        self.say(f"ChargePayment failed with Runtime.ExitError; worker pid(s) {dead or '?'} gone")
        view = self.api.get_order(order.order_id).json or {}
        calls, charges = len(view.get("provider_calls", [])), len(view.get("charges", []))
        self.expect(calls == 1 and charges == 1, f"the provider was called ({calls} call, {charges} charge)")
        self.expect(view.get("status") == "RUNNING", f"the order is {view.get('status')}, not finished")
        self.sfn.stop_execution(
            executionArn=arn, error="Demo.Stopped", cause="the ChargePayment worker crashed; redrive later"
        )
        stopped = self.wait_for(
            "the execution to stop",
            lambda: (
                s if (s := self.sfn.describe_execution(executionArn=arn)["status"]) != "RUNNING" else None
            ),
        )
        self.say(f"operator stops the stuck execution (its retries would wait for the lease) -> {stopped}")
        return order, arn

    def _express_gives_up(self, order: DemoOrder, pids: set[int]) -> str:
        """Express: each attempt that takes the dead one's fence over dies too, until the
        execution's FenceBusy retries give up; then the crash is disarmed, before the queue's retry."""

        def failed() -> dict[str, Any] | None:
            run = int(self.story.order(order.order_id).get("run", 1))
            ended = self.story.express_executions(order.order_id, run)
            return next((e for e in ended if e["status"] == "FAILED"), None)

        ended = polling.wait_for("the execution to give up", failed, timeout=EXPRESS_GIVES_UP_SECONDS)
        control.set_crash_points(self.out.endpoint, None)  # before the queue's retry, 10 s later
        control.prewarm(self.out.endpoint)
        dead = sorted(pid for pid in pids if not _alive(pid))
        died = sum(
            1
            for e in self.story.collect(order.order_id).attempts("ChargePayment")
            if e.outcome is Outcome.DIED
        )
        self.say(
            f"ChargePayment died {died} time(s) (worker pid(s) {dead or '?'} gone), each takeover after "
            f"the last one's lease; the execution ended FAILED ({'; '.join(ended['failures']) or '?'}); "
            "crash injection off again"
        )
        view = self.api.get_order(order.order_id).json or {}
        calls, charges = len(view.get("provider_calls", [])), len(view.get("charges", []))
        self.expect(calls == 1 and charges == 1, f"the provider was called ({calls} call, {charges} charge)")
        self.expect(died >= 2, f"every takeover died too ({died} deaths): a restart is needed")
        return str(ended["executionArn"])

    def duplicates(self, order: DemoOrder) -> None:
        self.section("duplicate deliveries of the first order's queue message")
        item = self.story.order(order.order_id)
        message = {
            "order_id": order.order_id,
            "run": int(item["run"]),
            "idempotency_key": item["idempotency_key"],
        }
        before = self.dedup_hits(order.order_id)
        for _ in range(2):
            self.sqs.send_message(QueueUrl=self.out["OrdersQueueUrl"], MessageBody=json.dumps(message))
        self.say(f"sent {json.dumps(message)[:90]}... twice more to the orders queue")
        hits = self.wait_for(
            "the worker to see both copies",
            lambda: n if (n := self.dedup_hits(order.order_id) - before) >= 2 else None,
        )
        self.expect(hits == 2, f"the worker's dedup answered both copies ({hits} dedup hits)")
        run = int(item["run"])
        if self.express:
            executions = self.story.express_executions(order.order_id, run)
        else:
            executions = self.story.executions(order.order_id, runs=run)
        self.expect(len(executions) == 1, f"{len(executions)} workflow execution for the order")

    def redrive(self, order: DemoOrder, failed_arn: str) -> None:
        self.section("redrive: the same execution token again")
        lease = self.lease_expiry(failed_arn)
        if lease is not None and (left := lease - time.time()) > 0:
            self.say(f"the dead attempt holds the ChargePayment fence for {left:.0f}s more; waiting it out")
            time.sleep(left + 0.5)
        result = redrive.redrive_execution(self.sfn, execution_arn=failed_arn)
        self.say(f"ops.redrive: {result.method.value} -> {result.execution_arn.rsplit(':', 1)[-1]}")
        status = self.wait_for(
            "the redriven execution",
            lambda: (
                s
                if (s := self.sfn.describe_execution(executionArn=result.execution_arn)["status"])
                != "RUNNING"
                else None
            ),
        )
        view = self.final_view(order)
        self.expect(status == "SUCCEEDED" and view["status"] == "COMPLETED", "the redriven order completes")
        self.expect(
            view["steps"].get("ReserveInventory") == "DONE",
            "ReserveInventory DONE on its fence (its stock was taken once, by the first run)",
        )
        calls, charges = len(view["provider_calls"]), len(view["charges"])
        # The takeover asks the provider first (reconcile by order and token): the dead attempt's
        # charge is found and recorded, so the provider is not called again.
        self.expect(
            calls == 1 and charges == 1,
            f"the takeover found the charge at the provider: {calls} provider call, {charges} charge",
        )

    def queue_restart(self, order: DemoOrder) -> None:
        """Express: the orders queue brought the message back and the worker ran the run again under
        the same token: the dead attempts' charge is found, every completed step skipped."""
        self.section("the orders queue runs it again: the same execution token")
        view = self.final_view(order)
        run = int(self.story.order(order.order_id).get("run", 1))
        executions = self.story.express_executions(order.order_id, run)
        tokens = {json.loads(str(e["input"]))["token"] for e in executions}
        for execution in executions:
            self.say(f"  execution {execution['name']}: {execution['status']}")
        self.expect(
            len(executions) >= 2 and executions[-1]["status"] == "SUCCEEDED" and len(tokens) == 1,
            f"{len(executions)} executions of run {run} under one token ({', '.join(sorted(tokens))}), "
            "the last SUCCEEDED: restart-with-same-token by the orders queue",
        )
        self.expect(view["status"] == "COMPLETED", "the restarted order completes")
        self.expect(
            view["steps"].get("ReserveInventory") == "DONE",
            "ReserveInventory DONE on its fence (its stock was taken once, by the first execution)",
        )
        calls, charges = len(view["provider_calls"]), len(view["charges"])
        self.expect(
            calls == 1 and charges == 1,
            f"the takeover found the charge at the provider: {calls} provider call, {charges} charge",
        )

    def lease_expiry(self, execution_arn: str) -> float | None:
        """When the ChargePayment fence of the execution's run stops being held (None: not held)."""
        state = json.loads(self.sfn.describe_execution(executionArn=execution_arn)["input"])
        fence = self.story.fence(state["token"], "ChargePayment", state["order_id"])
        return float(fence["lease_expires"]) if fence.get("state") == "IN_PROGRESS" else None

    def settle(self) -> Report:
        """Wait until the consumers caught up (or give up and report what is there)."""
        self.section("settling: consumers, then the invariant checker")
        stores = Stores.from_outputs(self.out.outputs, self.client)
        deadline = time.monotonic() + 60
        report = check(stores)
        while not report.ok and time.monotonic() < deadline:
            time.sleep(1.0)
            report = check(stores)
        self.say(f"invariant checker read {len(report.orders)} order(s)")
        return report

    def write_stories(self, state_dir: Path) -> list[Path]:
        """Each order's story as `<state dir>/stories/<order>.{json,html}`; the HTML paths."""
        directory = state_dir / "stories"
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for order in self.orders:
            if not order.order_id:
                continue
            story = self.story.collect(order.order_id)
            (directory / f"{order.order_id}.json").write_text(
                json.dumps(story.to_dict(), indent=1, default=str)
            )
            page = directory / f"{order.order_id}.html"
            page.write_text(story_html.render(story))
            written.append(page)
            self.say(f"  {order.label:<18} {page}")
        return written

    # -- report ---------------------------------------------------------------------------------
    def steps(self, order_id: str) -> str:
        """Each step's status on the order's latest run (its fence), from the order's story."""
        statuses = self.story.collect(order_id).facts["step_statuses"]
        return ", ".join(f"{name} {status}" for name, status in statuses.items()) or "-"

    def report(self, report: Report) -> str:
        rows = {row.order_id: row for row in report.orders}
        lines = [
            "",
            "== report",
            f"{'order':<36} {'scenario':<18} {'status':<10} {'replays':>7} {'dedup':>5} "
            f"{'charges':>7} {'calls':>5}",
        ]
        details = []
        for order in self.orders:
            if not order.order_id:
                continue
            row = rows.get(order.order_id)
            status = row.status if row else "?"
            charges, calls = (row.charges, row.provider_calls) if row else (0, 0)
            lines.append(
                f"{order.order_id:<36} {order.label:<18} {status:<10} {order.replays:>7} "
                f"{self.dedup_hits(order.order_id):>5} {charges:>7} {calls:>5}"
            )
            details.append(f"  {order.order_id}: {self.steps(order.order_id)}")
        lines += ["", "steps per order (their fences on the latest run; fence skips: the stories):", *details]
        lines.append(
            "dedup = duplicate messages/events the worker and consumers recognised; "
            "calls = raw calls the payment provider received"
        )
        return "\n".join(lines)


def _code(response: ApiResponse) -> str | None:
    body = response.json
    return str(body.get("error")) if isinstance(body, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
