"""A leased step's takeover looks before it acts: it reconciles with the external system, or, with
no way to ask, refuses to act on an attempt older than the external key's lifetime."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from reliability import ExternalEffect, FenceState, FenceStore, StepId
from reliability.errors import ExternalKeyExpired
from reliability.telemetry import Telemetry
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_helpers import FENCES, FakeClock, make_telemetry, read_emitted

STEP = StepId(token="dev.order-1.r1", step="Pay")
LEASE = 30.0
DAY = 86400.0


class ForgetfulProvider:
    """Dedupes on the key only while it remembers it; keeps every payment findable by reference."""

    def __init__(self, clock: FakeClock, key_lifetime: float) -> None:
        self.clock = clock
        self.key_lifetime = key_lifetime
        self.payments: list[tuple[str, float]] = []  # (key, at)

    def pay(self, key: str) -> dict[str, Any]:
        live = [c for c in self.payments if c[0] == key and c[1] + self.key_lifetime > self.clock()]
        if not live:
            self.payments.append((key, self.clock()))
        return {"payment": len(self.payments)}

    def find(self) -> dict[str, Any] | None:
        return {"payment": 1} if self.payments else None


@pytest.fixture
def crashing(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> FenceStore:
    """A fence store whose attempts die after the effect, before completing (once)."""
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=int(60 * DAY),
        telemetry=telemetry,
        namespace="saga",
        clock=clock,
        crash_plan=CrashPlan.parse("fence:after-effect:Pay=1", mode="raise"),
    )


def _die_after_the_effect(fences: FenceStore, provider: ForgetfulProvider, **guards: Any) -> None:
    with pytest.raises(SimulatedCrash):
        fences.run_leased(
            STEP, attempt_id="a-1", lease_seconds=LEASE, effect=ExternalEffect(provider.pay, **guards)
        )


def test_a_takeover_after_the_key_expired_records_the_charge_it_finds(
    crashing: FenceStore, clock: FakeClock
) -> None:
    # Given an attempt that paid and died before completing
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider, reconcile=provider.find)
    # When a takeover comes two days later, after the provider forgot the key
    clock.advance(2 * DAY)
    outcome = crashing.run_leased(
        STEP,
        attempt_id="a-2",
        lease_seconds=LEASE,
        effect=ExternalEffect(provider.pay, reconcile=provider.find),
    )
    # Then it records the payment it found instead of paying again
    assert len(provider.payments) == 1
    assert (outcome.result, outcome.skipped) == ({"payment": 1}, False)
    assert crashing.read(STEP).state is FenceState.COMPLETED  # type: ignore[union-attr]


def test_without_reconcile_the_same_takeover_charges_twice(crashing: FenceStore, clock: FakeClock) -> None:
    # The control: what the lookup prevents
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider)
    clock.advance(2 * DAY)
    crashing.run_leased(STEP, attempt_id="a-2", lease_seconds=LEASE, effect=provider.pay)
    assert len(provider.payments) == 2


def test_a_takeover_that_finds_nothing_acts(fences: FenceStore, clock: FakeClock) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    looked: list[bool] = []

    def find() -> dict[str, Any] | None:
        looked.append(True)
        return None

    def unreachable(_key: str) -> dict[str, Any]:
        raise ConnectionError("provider unreachable")

    # Given an attempt that failed before acting (a released claim), When a retry takes over
    with pytest.raises(ConnectionError):
        fences.run_leased(STEP, attempt_id="a-1", lease_seconds=LEASE, effect=unreachable)
    outcome = fences.run_leased(
        STEP, attempt_id="a-2", lease_seconds=LEASE, effect=ExternalEffect(provider.pay, reconcile=find)
    )
    # Then it looked, found nothing and acted once
    assert looked == [True]
    assert outcome.result == {"payment": 1}


def test_a_first_claim_never_looks(fences: FenceStore, clock: FakeClock) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    looked: list[bool] = []
    fences.run_leased(
        StepId(token="t-2", step="Pay"),
        attempt_id="a-1",
        lease_seconds=LEASE,
        effect=ExternalEffect(provider.pay, reconcile=lambda: looked.append(True)),
    )
    assert looked == []


def test_an_external_effect_acts_with_the_steps_own_key(fences: FenceStore, clock: FakeClock) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    fences.run_leased(STEP, attempt_id="a-1", lease_seconds=LEASE, effect=ExternalEffect(provider.pay))
    assert [key for key, _ in provider.payments] == [fences.external_key(STEP)]


def test_with_no_lookup_a_takeover_older_than_the_key_lifetime_stops_for_an_operator(
    crashing: FenceStore, clock: FakeClock
) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider, key_lifetime_seconds=DAY)
    # When a takeover comes after the key's lifetime, Then it refuses to act blind
    clock.advance(DAY + 60)
    with pytest.raises(ExternalKeyExpired, match=r"Pay.*86400 s"):
        crashing.run_leased(
            STEP,
            attempt_id="a-2",
            lease_seconds=LEASE,
            effect=ExternalEffect(provider.pay, key_lifetime_seconds=DAY),
        )
    assert len(provider.payments) == 1
    # And the fence is released for the operator's redrive (still IN_PROGRESS, no live lease)
    record = crashing.read(STEP)
    assert record is not None
    assert (record.state, record.lease_expires) == (FenceState.IN_PROGRESS, 0)


def test_with_no_lookup_a_takeover_inside_the_key_lifetime_acts(
    crashing: FenceStore, clock: FakeClock
) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider, key_lifetime_seconds=DAY)
    clock.advance(DAY / 2)
    crashing.run_leased(
        STEP,
        attempt_id="a-2",
        lease_seconds=LEASE,
        effect=ExternalEffect(provider.pay, key_lifetime_seconds=DAY),
    )
    assert len(provider.payments) == 1  # the provider deduped the key


def test_a_reconciled_takeover_says_so_in_its_decision(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    # (a logger of its own: a logger writes to the stdout of the test that first built it)
    crashing = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=int(60 * DAY),
        telemetry=make_telemetry(f"reconcile-{uuid.uuid4().hex}"),
        namespace="saga",
        clock=clock,
        crash_plan=CrashPlan.parse("fence:after-effect:Pay=1", mode="raise"),
    )
    # Given an attempt that paid and died, and a takeover that finds the payment
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider, reconcile=provider.find)
    clock.advance(2 * DAY)
    capsys.readouterr()
    crashing.run_leased(
        STEP,
        attempt_id="a-2",
        lease_seconds=LEASE,
        effect=ExternalEffect(provider.pay, reconcile=provider.find),
    )
    # Then the operator reads a takeover that reconciled, by which attempt, under which token
    reconciled = [
        line for line in read_emitted(capsys.readouterr().out).logs if line.get("reconciled") is True
    ]
    assert [(line["decision"], line["attempt"], line["fencing_token"]) for line in reconciled] == [
        ("FenceTakeover", "a-2", 2)
    ]


def test_with_no_lookup_a_takeover_exactly_at_the_key_lifetime_still_acts(
    crashing: FenceStore, clock: FakeClock
) -> None:
    # Given an attempt first claimed at t0 that died after charging
    provider = ForgetfulProvider(clock, key_lifetime=DAY + 1)
    start = clock()
    _die_after_the_effect(crashing, provider, key_lifetime_seconds=DAY)
    # When the takeover comes exactly one key lifetime later, Then the key still holds: it acts
    clock.now = start + DAY
    crashing.run_leased(
        STEP,
        attempt_id="a-2",
        lease_seconds=LEASE,
        effect=ExternalEffect(provider.pay, key_lifetime_seconds=DAY),
    )
    assert len(provider.payments) == 1


def test_a_takeover_refused_for_an_expired_key_tells_the_operator_what_to_do(
    crashing: FenceStore, clock: FakeClock
) -> None:
    provider = ForgetfulProvider(clock, key_lifetime=DAY)
    _die_after_the_effect(crashing, provider, key_lifetime_seconds=DAY)
    clock.advance(DAY + 60)
    with pytest.raises(ExternalKeyExpired) as refused:
        crashing.run_leased(
            STEP,
            attempt_id="a-2",
            lease_seconds=LEASE,
            effect=ExternalEffect(provider.pay, key_lifetime_seconds=DAY),
        )
    assert str(refused.value) == (
        "step Pay: taking over an attempt first claimed 86460 s ago, but the external system "
        "keeps its idempotency key only 86400 s and offers no lookup; acting again could repeat the "
        "effect. Check the external system by hand before redriving."
    )
