"""Property: under any sequence of attempts, crashes, pauses (zombies), lease expiries and replays
against one fence, the effect applies at most once and a completed result never changes."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from reliability import AtomicEffect, FenceState, FenceStore, StepId
from reliability.errors import FenceBusy, StaleFence
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_demo import DemoPaymentDeclined
from reliability_helpers import (
    FENCES,
    FakeClock,
    aws_client,
    counter_add,
    counter_value,
    create_tables,
    make_telemetry,
)

LEASE = 10.0
CRASHES = [
    "none",
    "after-claim",  # dies right after the claim's UpdateItem landed
    "before-provider",  # dies inside the effect before the external call
    "after-provider",  # dies after the external call, before returning
    "after-effect",  # the fence's own crash point between effect and record
    "before-commit",  # dies just before the completing TransactWriteItems is sent
    "after-commit",  # dies right after the completing TransactWriteItems landed
    "transient",  # an ordinary exception: the claim is released
    "declined",  # a BusinessError: recorded FAILED
]
OPS = st.one_of(
    st.tuples(st.just("attempt"), st.sampled_from(CRASHES)),
    st.tuples(st.just("pause"), st.just(0)),  # claim, then stall like a frozen process
    st.tuples(st.just("resume"), st.integers(min_value=0, max_value=3)),  # a stalled attempt wakes up
    st.tuples(st.just("advance"), st.sampled_from([1.0, LEASE / 2, LEASE + 1, LEASE + 1])),
)


@dataclass
class Provider:
    """An external system that dedupes on the idempotency key."""

    calls: int = 0
    payments: dict[str, str] = field(default_factory=dict)

    def pay(self, key: str) -> str:
        self.calls += 1
        return self.payments.setdefault(key, f"pay-{len(self.payments) + 1}")


@dataclass
class World:
    step: StepId
    counter: str
    store: FenceStore
    ddb: Any
    clock: FakeClock
    plan: CrashPlan
    provider: Provider = field(default_factory=Provider)
    paused: list[tuple[str, int]] = field(default_factory=list)
    completed_result: dict[str, Any] | None = None
    failed: bool = False
    attempts: int = 0

    def effect_for(self, attempt: str, crash: str) -> Any:
        def effect(key: str) -> AtomicEffect:
            if crash == "before-provider":
                raise SimulatedCrash("before-provider")
            if crash == "transient":
                raise ConnectionError("provider timeout")
            if crash == "declined":
                raise DemoPaymentDeclined("card")
            payment = self.provider.pay(key)
            if crash == "after-provider":
                raise SimulatedCrash("after-provider")
            return AtomicEffect({"payment": payment, "by": attempt}, [counter_add(self.counter)])

        return effect

    def attempt(self, crash: str) -> None:
        self.attempts += 1
        attempt = f"a{self.attempts}"
        self.plan.points = {
            "after-effect": {"fence:after-effect:pay": 1},
            "after-claim": {"after:DynamoDB.UpdateItem": 1},
            "before-commit": {"before:DynamoDB.TransactWriteItems": 1},
            "after-commit": {"after:DynamoDB.TransactWriteItems": 1},
        }.get(crash, {})
        self.plan._memory.clear()
        try:
            outcome = self.store.run_leased(
                self.step, attempt_id=attempt, lease_seconds=LEASE, effect=self.effect_for(attempt, crash)
            )
        except (SimulatedCrash, FenceBusy, StaleFence, ConnectionError, DemoPaymentDeclined):
            return
        finally:
            self.plan.points = {}
        # A returned outcome always agrees with the record
        record = self.store.read(self.step)
        assert record is not None
        assert outcome.result == record.result

    def pause(self) -> None:
        self.attempts += 1
        attempt = f"a{self.attempts}"
        with contextlib.suppress(FenceBusy):
            claim = self.store.claim(self.step, attempt_id=attempt, lease_seconds=LEASE)
            if claim.won:
                self.paused.append((attempt, claim.record.fencing_token))

    def resume(self, index: int) -> None:
        if not self.paused:
            return
        attempt, token = self.paused.pop(index % len(self.paused))
        payment = self.provider.pay(self.store.external_key(self.step))
        with contextlib.suppress(StaleFence):
            self.store.complete(
                self.step,
                fencing_token=token,
                result=AtomicEffect(
                    {"payment": payment, "by": attempt, "token": token}, [counter_add(self.counter)]
                ),
            )

    def check(self) -> None:
        applied = counter_value(self.ddb, self.counter)
        record = self.store.read(self.step)
        # No effect applies twice; the external system saw one idempotency key
        assert applied <= 1
        assert len(self.provider.payments) <= 1
        if record is None:
            assert applied == 0
            return
        if record.state is FenceState.COMPLETED:
            assert applied == 1
            if self.completed_result is None:
                self.completed_result = record.result
                # Only the holder of the current fencing token can have completed it (no zombie)
                assert record.result is not None
                assert record.result.get("token", record.fencing_token) == record.fencing_token
            # A completed result never changes
            assert record.result == self.completed_result
            assert not self.failed
        elif record.state is FenceState.FAILED:
            assert applied == 0
            self.failed = True
            assert self.completed_result is None
        else:
            assert self.completed_result is None
            assert not self.failed
            assert applied == 0


@dataclass
class Shared:
    ddb: Any
    plan: CrashPlan
    telemetry: Any


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    # One moto backend for every example (each example uses its own step and counter).
    with mock_aws():
        ddb = aws_client("dynamodb")
        create_tables(ddb)
        plan = CrashPlan(points={}, mode="raise")
        plan.instrument(ddb)
        yield Shared(ddb=ddb, plan=plan, telemetry=make_telemetry())


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=10))
# The schedules that matter most, always tried first: a zombie resuming after a takeover.
@example(ops=[("pause", 0), ("advance", LEASE + 1), ("pause", 0), ("resume", 0), ("resume", 0)])
@example(ops=[("pause", 0), ("advance", LEASE + 1), ("attempt", "after-provider"), ("resume", 0)])
@example(ops=[("attempt", "after-effect"), ("advance", LEASE + 1), ("attempt", "none"), ("attempt", "none")])
@example(ops=[("pause", 0), ("advance", LEASE + 1), ("attempt", "transient"), ("resume", 0)])
def test_no_effect_applies_twice_and_completed_results_never_change(
    shared: Shared, ops: list[tuple[str, Any]]
) -> None:
    # Given one fresh fence, a client that can crash after its calls, and an idempotent provider
    run = uuid.uuid4().hex
    clock = FakeClock()
    store = FenceStore(
        client=shared.ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=shared.telemetry,
        namespace="fence",
        clock=clock,
        crash_plan=shared.plan,
    )
    step = StepId(f"dev.order-{run}.r1", "pay")
    world = World(step=step, counter=run, store=store, ddb=shared.ddb, clock=clock, plan=shared.plan)
    # When the operations run in this order
    for op, arg in ops:
        if op == "attempt":
            world.attempt(arg)
        elif op == "pause":
            world.pause()
        elif op == "resume":
            world.resume(arg)
        else:
            clock.advance(arg)
        # Then the invariants hold after every step
        world.check()
    # And once every stalled attempt has woken and the lease has passed, a final attempt settles it
    while world.paused:
        world.resume(0)
        world.check()
    clock.advance(LEASE + 1)
    world.attempt("none")
    world.check()
    record = store.read(step)
    assert record is not None
    assert record.state in {FenceState.COMPLETED, FenceState.FAILED}
