"""The demo's scenarios against one local cloud: each acts as a client would and checks what a
client can see; what the service did is read as the ops tools read it (see `ops.demo`).

Everything of the service comes from its declaration and its proof (`ops.demo.plan`): the
request of each outcome, the starting and reading routes, the steps a catch route fails and
compensates. The crash and its recovery are `ops.demo.crash`; the report, `ops.demo.report`.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from ops import polling
from ops.api_client import ApiClient, ApiResponse
from ops.demo.plan import PLAN, Plan
from ops.lifecycle import target_of
from ops.local.outputs import Outputs
from ops.outcomes import Outcome, prepare
from ops.seed import seed_service
from ops.stack_outputs import queue_output, table_names
from ops.story.collect import Collector
from ops.story.logs import LocalLogFiles
from ops.story.model import Outcome as Decision

T = TypeVar("T")

WAIT_SECONDS = 120.0  # any single wait; a healthy local cloud needs a fraction of it
# What a story calls a duplicate the worker or a consumer recognised.
DEDUPLICATED = frozenset({Decision.DEDUP_HIT, Decision.DEDUPLICATED})
REPLAYS = 4  # how many times the first request is sent again


class DemoError(RuntimeError):
    """A scenario did not behave as the service promises (or the local cloud did not answer)."""


@dataclass
class DemoRequest:
    """One request the demo placed: its label in the report, its key, the entity it created."""

    label: str
    key: str
    entity_id: str = ""
    replays: int = 0


class Demo:
    """The scenarios, against one local cloud's outputs: HTTP for the API, and what the service
    did read as the ops tools read it (`ops.story`'s collector: entities, executions, fences, the
    decisions in the function logs; `ops.invariants`)."""

    def __init__(
        self, out: Outputs, *, state_dir: Path, console: IO[str] = sys.stdout, plan: Plan = PLAN
    ) -> None:
        if not out.api_url:
            raise DemoError("the local cloud serves no REST API")
        self.out = out
        self.plan = plan
        self.console = console
        self.started = time.monotonic()
        self.run_id = uuid.uuid4().hex[:8]
        self.api = ApiClient(out.api_url)
        target = target_of(out)
        self.client = target.client
        self.ddb = target.client("dynamodb")
        self.sqs = target.client("sqs")
        self.sfn = target.client("stepfunctions")
        self.tables = table_names(plan.service, out.outputs)
        self.story = Collector(
            outputs=out.outputs, client=target.client, logs=LocalLogFiles(state_dir / "logs")
        )
        self.express = self.story.workflow().express  # Express: the worker runs and waits, the queue retries
        self.requests: list[DemoRequest] = []
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

    def new_request(self, label: str) -> DemoRequest:
        placed = DemoRequest(label=label, key=f"demo-{self.run_id}-{len(self.requests) + 1}")
        self.requests.append(placed)
        return placed

    def post(self, body: dict[str, Any] | str, key: str | None) -> ApiResponse:
        """A POST to the starting route, with `Idempotency-Key: key` (none when key is None)."""
        headers = {"Idempotency-Key": key} if key is not None else {}
        return self.api.request("POST", self.plan.starting.path.lstrip("/"), body=body, headers=headers)

    def view(self, entity_id: str, url: str | None = None) -> ApiResponse:
        """A GET of the entity on its reading route (or at the `url` its answer gave)."""
        return self.api.request("GET", url or self.plan.read_path(entity_id).lstrip("/"))

    def place(self, placed: DemoRequest, body: dict[str, Any]) -> ApiResponse:
        route = self.plan.starting
        response = self.post(body, placed.key)
        if response.status != route.status or not isinstance(response.json, dict):
            raise DemoError(f"{route.name} answered {response.status}: {response.text[:300]}")
        placed.entity_id = str(response.json[self.plan.id_field])
        self.say(f"{route.name} (Idempotency-Key {placed.key}) -> {response.status} {placed.entity_id}")
        return response

    def final_view(self, placed: DemoRequest, url: str | None = None) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            response = self.view(placed.entity_id, url)
            view = response.json if response.status == 200 else None
            return view if isinstance(view, dict) and view.get("status") in self.plan.final else None

        view = self.wait_for(f"{placed.entity_id} to finish", probe)
        steps = ", ".join(f"{name} {status}" for name, status in view["steps"].items())
        self.say(f"GET {placed.entity_id} -> {view['status']} ({steps})")
        return view

    def dedup_hits(self, entity_id: str) -> int:
        """Duplicate messages and events of the entity that the worker and consumers recognised."""
        return sum(1 for entry in self.story.collect(entity_id).entries if entry.outcome in DEDUPLICATED)

    def provider_effects(self, view: dict[str, Any]) -> tuple[int, int] | None:
        """(calls the provider received, effects it applied) as the view shows them (the proof's)."""
        return None if self.plan.provider_effects is None else self.plan.provider_effects(view)

    # -- scenarios ----------------------------------------------------------------------------
    def seed(self) -> None:
        self.section("reference data")
        written = seed_service(self.ddb, self.out.outputs, declared=self.plan.service)
        prepare(self.plan.service, self.ddb, self.tables)
        self.say(f"seeded {written} item(s) (items already there are kept)")

    def happy_path(self) -> DemoRequest:
        """The happy path's request, the same request again (a client retrying), the same key with
        another body, no key, a body that is not JSON."""
        happy = self.plan.happy
        self.section(f"{happy.name}: a request, and the same request again (a client retrying)")
        placed = self.new_request(f"{happy.name} + {REPLAYS} retries")
        body = self.plan.request(happy.name, 0)
        first = self.place(placed, body)
        status_url = first.json.get("status_url") if isinstance(first.json, dict) else None
        if status_url:
            self.say(f"  status_url {status_url}")
        for _ in range(REPLAYS):
            again = self.post(body, placed.key)
            if again.header("Idempotent-Replayed") == "true" and again.json == first.json:
                placed.replays += 1
        self.expect(
            placed.replays == REPLAYS,
            f"{REPLAYS} more sends -> {placed.replays} identical replays (Idempotent-Replayed: true)",
        )
        conflict = self.post(self.plan.request(happy.name, 0, 1), placed.key)
        self.expect(
            conflict.status == 422 and _code(conflict) == "IdempotencyKeyReused",
            f"same key, another body -> {conflict.status} {_code(conflict)}",
        )
        missing = self.post(body, None)
        self.expect(
            missing.status == 400 and _code(missing) == "IdempotencyKeyMissing",
            f"no Idempotency-Key -> {missing.status} {_code(missing)}",
        )
        malformed = self.post("{not json", f"demo-{self.run_id}-malformed")
        # The API's body model answers before the function (InvalidRequest); without one, the
        # function says MalformedBody. Either way a 400 with a JSON error body.
        self.expect(
            malformed.status == 400 and _code(malformed) in {"InvalidRequest", "MalformedBody"},
            f"a body that is not JSON -> {malformed.status} {_code(malformed)}",
        )
        view = self.final_view(placed, str(status_url) if status_url else None)
        self.expect(
            view["status"] == happy.status, f"it ends {happy.status} (its steps: {', '.join(happy.steps)})"
        )
        effects = self.provider_effects(view)
        if effects is not None:
            self.expect(effects == (1, 1), f"the provider: {effects[0]} call, {effects[1]} effect")
        return placed

    def catch_route(self, outcome: Outcome) -> DemoRequest:
        """A request that ends on a catch route: its failing step FAILED, each step it had done
        compensated, the world it touched as it was."""
        self.section(f"{outcome.name}: {outcome.failing_step} fails with {outcome.error}")
        placed = self.new_request(outcome.name)
        body = self.plan.request(outcome.name, 0)
        before = self.plan.observe(self.ddb, self.tables, body)
        self.place(placed, body)
        view = self.final_view(placed)
        self.expect(view["status"] == outcome.status, f"it ends {outcome.status}")
        compensated = self.plan.compensated(outcome)
        self.expect(
            view["steps"].get(outcome.failing_step) == "FAILED"
            and all(view["steps"].get(step) == "COMPENSATED" for step in compensated),
            f"{outcome.failing_step} FAILED ({outcome.error})"
            + "".join(f", {step} COMPENSATED by {by}" for step, by in compensated.items()),
        )
        after = self.plan.observe(self.ddb, self.tables, body)
        if before is not None:
            self.expect(after == before, f"what it touched is back where it was ({before} -> {after})")
        return placed

    def duplicates(self, placed: DemoRequest) -> None:
        self.section("duplicate deliveries of the first request's queue message")
        item = self.story.entity_item(placed.entity_id)
        message = {
            self.plan.id_field: placed.entity_id,
            "run": int(item["run"]),
            "idempotency_key": item["idempotency_key"],
        }
        before = self.dedup_hits(placed.entity_id)
        queue = self.plan.service.queue
        for _ in range(2):
            self.sqs.send_message(QueueUrl=self.out[queue_output(queue)], MessageBody=json.dumps(message))
        self.say(f"sent {json.dumps(message)[:90]}... twice more to the {queue} queue")
        hits = self.wait_for(
            "the worker to see both copies",
            lambda: n if (n := self.dedup_hits(placed.entity_id) - before) >= 2 else None,
        )
        self.expect(hits == 2, f"the worker's dedup answered both copies ({hits} dedup hits)")
        run = int(item["run"])
        if self.express:
            executions = self.story.express_executions(placed.entity_id, run)
        else:
            executions = self.story.executions(placed.entity_id, runs=run)
        self.expect(len(executions) == 1, f"{len(executions)} workflow execution for it")


def _code(response: ApiResponse) -> str | None:
    body = response.json
    return str(body.get("error")) if isinstance(body, dict) else None
