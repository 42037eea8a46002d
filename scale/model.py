"""A discrete-event model of the order chain under AWS's quotas, in virtual time.

Why a model and not the real handlers: 10,000 orders through the handlers on moto would take
hours (moto's TransactWriteItems deep-copies every table it touches; docs/local-cloud.md,
"How it is built"), and a soak is an hour of traffic. The simulator (``lab/src/simulator/``) proves the
handlers one order at a time; this model proves what the capacity settings do to a crowd.

What it models, with the semantics of the real services:
- SQS standard queues: visibility timeout per receive, ChangeMessageVisibility, the move to the
  DLQ on the receive after maxReceiveCount, occasional duplicate delivery; values from the
  template.
- SQS event source mappings: 5 concurrent batches at first, up to 300 more a minute while
  messages wait, at most MaximumConcurrency (or Lambda's 1,000), batch size, partial batch
  failures; an invocation Lambda throttles returns its batch to the queue after the visibility
  timeout, having spent a receive of every message in it.
- Lambda concurrency: the account pool (its quota minus every reservation) and each reserved
  function's own pool; a task invoked without a free slot fails with
  ``Lambda.TooManyRequestsException``.
- Step Functions: StartExecution and state-transition token buckets (us-east-1 defaults from
  infra.capacity.QUOTAS); the state machine's own states, Retry (interval, backoff rate,
  MaxDelay, max attempts, full jitter) and Catch from the template; execution names unique.
- DynamoDB: the daily aggregate item as a hot key (one partition's write units).
- The provider a leased step calls (``ops.roles``; the sample's payment provider): a token bucket
  at the stage's rate limit; a refused call is the adapter's ``TransientError`` (retried by the
  state machine).
- Faults (the fault search's kinds): crashed invocations (``Runtime.ExitError``, before or after
  the effect), timeouts (``Sandbox.Timedout`` after the function's timeout), transient store
  errors, duplicate deliveries, poison messages, a drained StartExecution bucket, a provider
  brownout.

What it does not model: the handlers' code (each order is drawn to end in one of the workflow's
outcomes, ``ops.outcomes``: its failing step raises the outcome's error; the fences are
modelled as "an effect applies once"), the API (orders enter at the orders
queue), Lambda's per-function scaling rate and cold starts, latency variance beyond a +-20 %
jitter, the queues' retention (an hour-long run never reaches it), DynamoDB partitions other
than the hot item, and operator redrives (an order left non-terminal is a violation).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.capacity import TRANSACTIONAL_WRU_PER_ITEM
from ops.outcomes import outcomes
from ops.service import proof, service
from reliability.cdk.capacity import (
    PROVIDER_CALL_SECONDS,
    STEP_SECONDS,
    WORKER_SECONDS_PER_MESSAGE,
    quota,
)
from reliability.declaration import function_name
from scale.services import FAIL, OK, THROTTLED, Esm, Message, Pools, Queue, Sim, TokenBucket
from scale.topology import Topology

# The workflow as the model plays it (the declaration's, `ops.service`): the event consumers (the
# events' step sends to each one's queue; one that writes a table the proof names in
# `HOT_KEY_TABLES` updates one daily item per event, a hot key); the steps that call a provider
# other than the events (a token bucket, the call's duration), those that publish the events, the
# status each sets, and, per catch outcome, the step that fails and its error.
SERVICE = service()
CONSUMERS = tuple(consumer.name for consumer in SERVICE.consumers)
HOT_KEY_TABLES = frozenset(getattr(proof(SERVICE), "HOT_KEY_TABLES", ()))
HOT_KEY_CONSUMERS = frozenset(c.name for c in SERVICE.consumers if HOT_KEY_TABLES & set(c.tables))
PROVIDER_STEPS = {
    function_name(s.name): s.provider for s in SERVICE.steps if s.provider and s.provider != SERVICE.events
}
EVENTS_STEPS = frozenset(function_name(s.name) for s in SERVICE.steps if s.provider == SERVICE.events)
STATUSES = {function_name(s.name): s.status for s in SERVICE.steps if s.status}
HAPPY_STATUS = outcomes(SERVICE)[0].status
FAILURES = {
    o.name: (function_name(o.failing_step), o.error) for o in outcomes(SERVICE) if o.failing_step and o.error
}

LAMBDA_THROTTLED = "Lambda.TooManyRequestsException"
TRANSIENT = "TransientError"
CRASHED = "Runtime.ExitError"
TIMED_OUT = "Sandbox.Timedout"


@dataclass(frozen=True)
class Faults:
    """Fault rates and windows; all zero is a clean run."""

    crash: float = 0.0  # per invocation: the sandbox dies (before or after the effect)
    timeout: float = 0.0  # per task invocation: runs to its timeout
    transient: float = 0.0  # per invocation: a store call fails transiently
    duplicate: float = 0.0  # per message sent: SQS delivers a second copy
    poison: float = 0.0  # per order message: the body is malformed (the worker dead-letters it)
    start_storm: tuple[float, float] | None = None  # StartExecution bucket drained in [from, to)
    provider_brownout: tuple[float, float, float] | None = None  # (from, to, share refused)


@dataclass
class Order:
    order_id: str
    outcome: str | None = None  # the catch outcome its business rules lead to (None: the happy path)
    terminal: list[str] = field(default_factory=list)  # each terminal status written


class Model:
    """The chain for one topology and one fault plan; ``submit`` orders, ``run``, then ``report``."""

    def __init__(self, topology: Topology, faults: Faults, seed: int) -> None:
        self.topology, self.faults = topology, faults
        self.rng = random.Random(seed)  # noqa: S311 - a reproducible model, not a secret
        self.sim = Sim()
        self.pools = Pools(topology)
        self.throttles: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.start_bucket = TokenBucket(
            quota("start_execution_bucket_us_east_1"), quota("start_execution_refill_us_east_1")
        )
        self.start_bucket.blocked = faults.start_storm
        self.transition_bucket = TokenBucket(
            quota("state_transition_bucket_us_east_1"), quota("state_transition_refill_us_east_1")
        )
        provider_rate = topology.capacity.provider_requests_per_second
        self.provider = TokenBucket(provider_rate, provider_rate)
        hot_key_rate = quota("dynamodb_partition_wcu") / TRANSACTIONAL_WRU_PER_ITEM
        self.hot_key = TokenBucket(hot_key_rate, hot_key_rate)
        self.orders: dict[str, Order] = {}
        self.executions: set[str] = set()
        self.running_executions = 0
        self.failed_executions: list[str] = []
        self.applied: dict[str, Counter[str]] = {name: Counter() for name in CONSUMERS}
        self.effects: set[tuple[str, str]] = set()
        # Each order's task invocations in order (what the anchor test compares with the handlers).
        self.trace: dict[str, list[str]] = {}
        self.queues = {name: Queue(self.sim, spec) for name, spec in topology.queues.items()}
        self.esms = {name: Esm(self, queue) for name, queue in self.queues.items()}
        self.last_activity = 0.0
        self.first_submit: float | None = None

    # --- orders in ------------------------------------------------------------------------------
    def submit(self, at: float, order: Order) -> None:
        self.orders[order.order_id] = order

        def send() -> None:
            self.first_submit = self.sim.now if self.first_submit is None else self.first_submit
            poison = self.rng.random() < self.faults.poison
            self._send(SERVICE.queue, Message(order.order_id, self.sim.now, poison=poison))

        self.sim.at(at, send)

    def _send(self, queue: str, message: Message) -> None:
        self.queues[queue].send(message)
        if self.rng.random() < self.faults.duplicate:
            self.queues[queue].send(Message(message.ref, message.sent_at, poison=message.poison))
        self.esms[queue].arm()

    def handle(self, function: str, batch: list[Message]) -> tuple[float, list[str]]:
        """One invocation of a queue's function on a batch: (duration, each record's outcome)."""
        return self.worker(batch) if function == "worker" else self.consumer(function, batch)

    # --- the worker -----------------------------------------------------------------------------
    def worker(self, batch: list[Message]) -> tuple[float, list[str]]:
        t, outcomes = self.sim.now, []
        crash_at = self._crash_index(len(batch))
        for index, message in enumerate(batch):
            t += WORKER_SECONDS_PER_MESSAGE * self.rng.uniform(0.8, 1.2)
            if index == crash_at:
                return t - self.sim.now, [FAIL] * len(batch)  # the whole batch comes back
            if message.poison:
                outcomes.append(OK)  # dead-lettered by the handler itself, with a reason
                self.queues[SERVICE.queue].dlq.append(message)
            elif message.ref in self.executions:
                outcomes.append(OK)  # ExecutionAlreadyExists with the same input: our own start
            elif self.rng.random() < self.faults.transient:
                outcomes.append(FAIL)
            elif self.start_bucket.take(t):
                self.executions.add(message.ref)
                self._start_execution(message.ref, t)
                outcomes.append(OK)
            else:
                self.throttles["Step Functions StartExecution"] += 1
                outcomes.append(THROTTLED)
        return t - self.sim.now, outcomes

    def _crash_index(self, size: int) -> int | None:
        return self.rng.randrange(size) if self.rng.random() < self.faults.crash else None

    # --- the consumers --------------------------------------------------------------------------
    def consumer(self, name: str, batch: list[Message]) -> tuple[float, list[str]]:
        t, outcomes = self.sim.now, []
        crash_at = self._crash_index(len(batch))
        for index, message in enumerate(batch):
            t += STEP_SECONDS * self.rng.uniform(0.8, 1.2)
            if index == crash_at:
                return t - self.sim.now, [FAIL] * len(batch)
            if self.applied[name][message.ref]:
                outcomes.append(OK)  # dedup hit
            elif self.rng.random() < self.faults.transient:
                outcomes.append(FAIL)
            elif name in HOT_KEY_CONSUMERS and not self.hot_key.take(t):
                self.throttles["DynamoDB hot key (daily aggregate)"] += 1
                outcomes.append(FAIL)
            else:
                self.applied[name][message.ref] += 1
                outcomes.append(OK)
        return t - self.sim.now, outcomes

    # --- Step Functions ---------------------------------------------------------------------------
    def _start_execution(self, order_id: str, at: float) -> None:
        self.running_executions += 1
        execution = _Execution(order_id)
        self.sim.at(at, lambda: self._enter(execution, self.topology.workflow["StartAt"]))

    def _enter(self, execution: _Execution, state_name: str) -> None:
        if not self.transition_bucket.take(self.sim.now):
            self.throttles["Step Functions StateTransition"] += 1
            wait = self.transition_bucket.wait(self.sim.now)
            self.sim.at(self.sim.now + wait, lambda: self._enter(execution, state_name))
            return
        state = self.topology.workflow["States"][state_name]
        execution.state = state_name
        if state["Type"] == "Succeed":
            self._finish()
        elif state["Type"] == "Task":
            self._invoke(execution)
        else:
            raise ValueError(f"the model runs Task and Succeed states, not {state['Type']}")

    def _invoke(self, execution: _Execution) -> None:
        state = self.topology.workflow["States"][execution.state]
        function = self.topology.task_function(execution.state) or ""
        self.trace.setdefault(execution.order_id, []).append(function)
        if not self.pools.acquire(function):
            self.throttles[f"Lambda {function}"] += 1
            self._error(execution, LAMBDA_THROTTLED)
            return
        duration, error = self._step(function, execution)

        def done() -> None:
            self.pools.release(function)
            self.last_activity = self.sim.now
            if error:
                self._error(execution, error)
            elif "Next" in state:
                self._enter(execution, state["Next"])
            else:
                self._finish()

        self.sim.at(self.sim.now + duration, done)

    def _step(self, function: str, execution: _Execution) -> tuple[float, str | None]:
        """One task invocation: (duration, error name or None). Effects apply once (the fence)."""
        order = self.orders[execution.order_id]
        timeout = self.topology.functions[function].timeout
        roll = self.rng.random()
        if roll < self.faults.timeout:
            return float(timeout), TIMED_OUT
        if roll < self.faults.timeout + self.faults.transient:
            return STEP_SECONDS, TRANSIENT
        crash = self.rng.random() < self.faults.crash
        crash_after_effect = crash and self.rng.random() < 0.5
        if crash and not crash_after_effect:
            return STEP_SECONDS / 2, CRASHED
        duration = STEP_SECONDS * self.rng.uniform(0.8, 1.2)
        error = self._effect(function, order)
        if function in PROVIDER_STEPS:
            duration = PROVIDER_CALL_SECONDS * self.rng.uniform(0.8, 1.2)
        return duration, CRASHED if crash_after_effect and error is None else error

    def _effect(self, function: str, order: Order) -> str | None:
        once = (order.order_id, function)
        failing, error = FAILURES[order.outcome] if order.outcome else (None, None)
        if function == failing and function not in PROVIDER_STEPS:
            return error  # an atomic step's rule refuses: nothing applied
        if function in PROVIDER_STEPS:
            if once in self.effects:
                return None  # the fence: the provider's effect is already recorded
            brownout = self.faults.provider_brownout
            refused = (
                brownout and brownout[0] <= self.sim.now < brownout[1] and self.rng.random() < brownout[2]
            )
            if refused or not self.provider.take(self.sim.now):
                self.throttles[f"{PROVIDER_STEPS[function]} provider"] += 1
                return TRANSIENT
            if function == failing:
                return error  # the provider refuses for good
        if function in EVENTS_STEPS:
            # Leased: a re-run after a crash re-sends the same event id (consumers dedupe).
            for queue in CONSUMERS:
                self._send(queue, Message(order.order_id, self.sim.now))
        if once not in self.effects:
            self.effects.add(once)
            if function in STATUSES:
                order.terminal.append(STATUSES[function])
        return None

    def _error(self, execution: _Execution, error: str) -> None:
        state = self.topology.workflow["States"][execution.state]
        for index, retrier in enumerate(state.get("Retry", [])):
            if error not in retrier["ErrorEquals"] and "States.ALL" not in retrier["ErrorEquals"]:
                continue
            attempt = execution.attempts[(execution.state, index)]
            if attempt < retrier.get("MaxAttempts", 3):
                execution.attempts[(execution.state, index)] += 1
                delay = retrier.get("IntervalSeconds", 1) * retrier.get("BackoffRate", 2.0) ** attempt
                delay = min(delay, retrier.get("MaxDelaySeconds", delay))
                if retrier.get("JitterStrategy") == "FULL":
                    delay = self.rng.uniform(0, delay)
                self.retries[error] += 1
                self.sim.at(self.sim.now + delay, lambda: self._invoke(execution))
                return
            break  # the matching retrier is spent: on to Catch
        for catcher in state.get("Catch", []):
            if error in catcher["ErrorEquals"] or "States.ALL" in catcher["ErrorEquals"]:
                self._enter(execution, catcher["Next"])
                return
        self.failed_executions.append(f"{execution.order_id} at {execution.state}: {error}")
        self.running_executions -= 1

    def _finish(self) -> None:
        self.running_executions -= 1
        self.last_activity = self.sim.now

    # --- the run ----------------------------------------------------------------------------------
    def busy(self) -> bool:
        return self.running_executions > 0 or any(q.live for q in self.queues.values())

    def run(self, horizon: float) -> None:
        self.sim.run(horizon)

    def report(self) -> dict[str, Any]:
        completed = sum(1 for o in self.orders.values() if o.terminal == [HAPPY_STATUS])
        failed = sum(1 for o in self.orders.values() if len(o.terminal) == 1 and o.terminal != [HAPPY_STATUS])
        legit_dlq = {name: sum(1 for m in q.dlq if not m.poison) for name, q in self.queues.items()}
        poison_dlq = {name: sum(1 for m in q.dlq if m.poison) for name, q in self.queues.items()}
        poisoned = {m.ref for m in self.queues[SERVICE.queue].dlq if m.poison}
        violations: list[str] = []
        for order in self.orders.values():
            if len(order.terminal) != 1 and order.order_id not in poisoned:
                violations.append(f"{order.order_id}: terminal {order.terminal or 'never'}")
        for name, count in legit_dlq.items():
            if count:
                violations.append(f"{count} legitimate messages in {name}-dlq")
        completed_ids = {o.order_id for o in self.orders.values() if o.terminal == [HAPPY_STATUS]}
        for consumer, applied in self.applied.items():
            wrong = [ref for ref in completed_ids if applied[ref] != 1]
            if wrong:
                violations.append(f"{consumer}: {len(wrong)} completed orders not applied exactly once")
        return {
            "orders": len(self.orders),
            "completed": completed,
            "failed_compensated": failed,
            "poison_orders": len(poisoned),
            "not_terminal": len(self.orders) - completed - failed - len(poisoned),
            "time_to_drain_s": round(self.last_activity - (self.first_submit or 0.0), 1),
            "max_queue_age_s": {name: round(q.max_age, 1) for name, q in self.queues.items()},
            "throttles": dict(sorted(self.throttles.items())),
            "retries": dict(sorted(self.retries.items())),
            "dlq_legit": legit_dlq,
            "dlq_poison": poison_dlq,
            "failed_executions": len(self.failed_executions),
            "peak_concurrency": dict(sorted(self.pools.peak.items())),
            "violations": len(violations),
            "violation_examples": violations[:5],
            "events": self.sim.events,
        }


@dataclass(eq=False)
class _Execution:
    order_id: str
    state: str = ""
    attempts: Counter[tuple[str, int]] = field(default_factory=Counter)


def new_orders(count: int, *, rng: random.Random, shares: Sequence[tuple[str, float]]) -> list[Order]:
    """`count` orders, each drawn (one roll) into the first catch outcome of `shares` whose
    cumulative share the roll is under, else the happy path."""
    orders = []
    for n in range(count):
        roll, below = rng.random(), 0.0
        drawn = None
        for name, share in shares:
            if below <= roll < below + share:
                drawn = name
                break
            below += share
        orders.append(Order(f"o-{n:06d}", outcome=drawn))
    return orders
