"""run_leased and the primitives: claim, complete, fail, release, read; fencing and takeover."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from reliability import AtomicEffect, BusinessError, FenceState, FenceStore, StepId, Write
from reliability.errors import EffectConditionFailed, FenceBusy, ResultTooLarge, StaleFence, TransientError
from reliability.telemetry import Telemetry
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined
from reliability_helpers import (
    FENCES,
    CallCounter,
    FakeClock,
    aws_client,
    counter_add,
    counter_value,
    fence_store,
    lose_answer,
    make_telemetry,
    put_stock,
    read_emitted,
    stock_decrement,
    stock_of,
)

STEP = StepId(token="dev.order-1.r1", step="pay")
LEASE = 30.0


class Provider:
    """A pretend external system that dedupes on the idempotency key it is given."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.payments: dict[str, int] = {}

    def pay(self, key: str, amount: int = 100) -> dict[str, Any]:
        self.calls.append(key)
        self.payments.setdefault(key, amount)
        return {"payment_id": f"pay-{len(self.payments)}", "amount": self.payments[key]}


def test_first_run_claims_calls_the_effect_with_the_step_key_and_completes(
    fences: FenceStore, ddb: Any
) -> None:
    # Given an external provider
    provider = Provider()
    calls = CallCounter(ddb)
    # When the step runs leased
    outcome = fences.run_leased(STEP, attempt_id="req-1", lease_seconds=LEASE, effect=provider.pay)
    # Then claim + complete are two round trips, and the effect saw the step's stable key
    assert calls.take() == ["UpdateItem", "UpdateItem"]
    assert outcome.skipped is False
    assert outcome.fencing_token == 1
    assert provider.calls == [fences.external_key(STEP)]
    record = fences.read(STEP)
    assert record is not None
    assert record.state is FenceState.COMPLETED
    assert record.owner is None
    assert record.result == outcome.result


def test_replay_returns_the_identical_result_in_one_round_trip(fences: FenceStore, ddb: Any) -> None:
    # Given a completed leased step
    provider = Provider()
    first = fences.run_leased(STEP, attempt_id="req-1", lease_seconds=LEASE, effect=provider.pay)
    calls = CallCounter(ddb)
    # When a retry runs it
    replay = fences.run_leased(STEP, attempt_id="req-2", lease_seconds=LEASE, effect=provider.pay)
    # Then the stored result comes from ALL_OLD of the refused claim; the effect did not run
    assert calls.take() == ["UpdateItem"]
    assert replay.skipped is True
    assert replay.result == first.result
    assert replay.fencing_token == first.fencing_token
    assert len(provider.calls) == 1


def test_two_attempts_racing_one_wins(fences: FenceStore) -> None:
    # Given attempt A is inside its effect when attempt B arrives (the worst interleaving)
    provider = Provider()
    seen: list[BaseException] = []

    def effect_a(key: str) -> dict[str, Any]:
        try:
            fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=provider.pay)
        except FenceBusy as busy:
            seen.append(busy)
        return provider.pay(key)

    # When both run
    outcome_a = fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=effect_a)
    # Then B was refused with the retryable FenceBusy, A won, and the effect ran once
    assert len(seen) == 1
    assert outcome_a.skipped is False
    assert len(provider.calls) == 1
    # And B's retry gets A's result
    outcome_b = fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=provider.pay)
    assert outcome_b.skipped is True
    assert outcome_b.result == outcome_a.result


def test_takeover_after_lease_expiry_and_the_zombie_is_fenced_off(
    fences: FenceStore, clock: FakeClock, ddb: Any
) -> None:
    # Given attempt A claimed and then stalled (no completion)
    a = fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    assert a.won
    assert a.record.fencing_token == 1
    # When its lease passes and attempt B runs the step
    clock.advance(LEASE + 1)
    provider = Provider()
    b = fences.run_leased(
        STEP,
        attempt_id="B",
        lease_seconds=LEASE,
        effect=lambda key: AtomicEffect(provider.pay(key), [counter_add("payment")]),
    )
    # Then B took over with a higher fencing token and the same external key
    assert b.fencing_token == 2
    assert provider.calls == [fences.external_key(STEP)]
    assert counter_value(ddb, "payment") == 1
    # And A, resuming as a zombie, cannot complete, and its effect writes do not land
    with pytest.raises(StaleFence):
        fences.complete(
            STEP, fencing_token=1, result=AtomicEffect({"zombie": True}, [counter_add("payment")])
        )
    assert counter_value(ddb, "payment") == 1
    record = fences.read(STEP)
    assert record is not None
    assert record.result == b.result


def test_a_stale_owner_completion_is_rejected_before_the_new_owner_completes(
    fences: FenceStore, clock: FakeClock, ddb: Any
) -> None:
    # Given A's lease expired and B claimed (B has not completed yet)
    fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    b = fences.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    assert b.takeover
    # When A tries to complete with its writes, Then StaleFence and nothing written
    with pytest.raises(StaleFence):
        fences.complete(STEP, fencing_token=1, result=AtomicEffect({"by": "A"}, [counter_add("x")]))
    with pytest.raises(StaleFence):
        fences.complete(STEP, fencing_token=1, result={"by": "A"})
    with pytest.raises(StaleFence):
        fences.fail(STEP, fencing_token=1, error=DemoOutOfStock("late"))
    assert counter_value(ddb, "x") == 0
    # And B completes normally
    done = fences.complete(STEP, fencing_token=2, result=AtomicEffect({"by": "B"}, [counter_add("x")]))
    assert done.result == {"by": "B"}
    assert counter_value(ddb, "x") == 1


def test_a_live_lease_makes_another_attempt_busy(fences: FenceStore, clock: FakeClock) -> None:
    # Given A holds the lease
    fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    # When B arrives before it expires, Then FenceBusy (retryable)
    clock.advance(LEASE - 1)
    with pytest.raises(FenceBusy):
        fences.claim(STEP, attempt_id="B", lease_seconds=LEASE)


def test_business_error_is_recorded_and_replayed_identically(fences: FenceStore) -> None:
    # Given an effect that declines
    calls: list[str] = []

    def decline(key: str) -> dict[str, Any]:
        calls.append(key)
        raise DemoPaymentDeclined("insufficient funds")

    # When it runs, Then the error propagates and is recorded FAILED
    with pytest.raises(DemoPaymentDeclined):
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=decline)
    record = fences.read(STEP)
    assert record is not None
    assert record.state is FenceState.FAILED
    # And a replay raises the same class, message and details without running the effect
    with pytest.raises(DemoPaymentDeclined) as replayed:
        fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=decline)
    assert type(replayed.value) is DemoPaymentDeclined
    assert str(replayed.value) == "payment declined: insufficient funds"
    assert replayed.value.details == {"reason": "insufficient funds"}
    assert len(calls) == 1


def test_other_exceptions_release_the_claim_and_propagate_intact(fences: FenceStore) -> None:
    # Given an effect that hits a transient failure
    boom = ConnectionError("provider timeout")

    def flaky(key: str) -> dict[str, Any]:
        raise boom

    # When it runs, Then the very same exception propagates
    with pytest.raises(ConnectionError) as raised:
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=flaky)
    assert raised.value is boom
    # And the lease is cleared (counter kept), so a retry claims at once without waiting
    record = fences.read(STEP)
    assert record is not None
    assert record.state is FenceState.IN_PROGRESS
    assert record.lease_expires == 0
    assert record.owner is None
    retry = fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=lambda key: {"ok": True})
    assert retry.fencing_token == 2


def test_release_by_a_stale_owner_is_refused(fences: FenceStore, clock: FakeClock) -> None:
    fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    fences.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    assert fences.release(STEP, fencing_token=1) is False
    assert fences.release(STEP, fencing_token=2) is True


def test_crash_between_effect_and_record_reruns_with_the_same_key(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    # Given a crash armed between the effect and its record
    plan = CrashPlan.parse("fence:after-effect:pay=1", mode="raise")
    store = fence_store(ddb, telemetry, clock, crash_plan=plan)
    provider = Provider()
    # When the first attempt dies there (a BaseException, not swallowed by except Exception)
    with pytest.raises(SimulatedCrash):
        store.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=provider.pay)
    # Then the record is still held until the lease passes
    with pytest.raises(FenceBusy):
        store.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=provider.pay)
    # And after it the retry re-runs the effect with the same key, which the provider dedupes
    clock.advance(LEASE + 1)
    outcome = store.run_leased(STEP, attempt_id="C", lease_seconds=LEASE, effect=provider.pay)
    assert provider.calls == [store.external_key(STEP)] * 2
    assert len(provider.payments) == 1
    assert outcome.result == {"payment_id": "pay-1", "amount": 100}


def test_result_too_large_releases_and_raises(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> None:
    store = fence_store(ddb, telemetry, clock, max_result_bytes=50)
    with pytest.raises(ResultTooLarge):
        store.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=lambda key: {"x": "y" * 100})
    record = store.read(STEP)
    assert record is not None
    assert record.state is FenceState.IN_PROGRESS
    assert record.result is None
    assert record.lease_expires == 0


def test_leased_atomic_effect_condition_failure_is_recorded_as_business_error(
    fences: FenceStore, ddb: Any
) -> None:
    # Given stock of 0 and a leased step whose effect ends with a conditional stock write
    put_stock(ddb, "item", 0)

    def effect(key: str) -> AtomicEffect:
        return AtomicEffect({"reserved": 1}, [Write(stock_decrement("item", 1), DemoOutOfStock("item"))])

    # When it runs, Then the mapped error is raised, recorded, and the stock is untouched
    with pytest.raises(DemoOutOfStock):
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=effect)
    assert stock_of(ddb, "item") == 0
    record = fences.read(STEP)
    assert record is not None
    assert record.state is FenceState.FAILED
    # And it is recorded as the error raised, so a Catch on its name matches every retry
    assert (record.error_type, record.error_message) == ("DemoOutOfStock", "item")
    with pytest.raises(DemoOutOfStock, match=r"^item$"):
        fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=effect)


def test_items_of_one_step_are_fenced_independently(fences: FenceStore) -> None:
    one = StepId("dev.o.r1", "reserve", item="item-1")
    two = StepId("dev.o.r1", "reserve", item="item-2")
    assert fences.external_key(one) != fences.external_key(two)
    assert (
        fences.run_leased(one, attempt_id="A", lease_seconds=LEASE, effect=lambda k: {"k": k}).skipped
        is False
    )
    assert (
        fences.run_leased(two, attempt_id="A", lease_seconds=LEASE, effect=lambda k: {"k": k}).skipped
        is False
    )


def test_non_mapping_result_is_a_type_error_and_releases(fences: FenceStore) -> None:
    with pytest.raises(TypeError, match=r"^a step result must be a mapping, got list$"):
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=lambda k: ["list"])  # type: ignore[arg-type,return-value]
    record = fences.read(STEP)
    assert record is not None
    assert record.lease_expires == 0


# --- store failures (botocore Stubber) ------------------------------------------------------


def stubbed(telemetry: Telemetry) -> tuple[FenceStore, Stubber]:
    client = aws_client("dynamodb")
    store = fence_store(client, telemetry, FakeClock())
    return store, Stubber(client)


def test_claim_throttled_is_store_unavailable(telemetry: Telemetry) -> None:
    store, stub = stubbed(telemetry)
    stub.add_client_error("update_item", service_error_code="ProvisionedThroughputExceededException")
    with stub, pytest.raises(TransientError):
        store.claim(STEP, attempt_id="A", lease_seconds=LEASE)


def test_claim_refused_without_old_item_is_busy(telemetry: Telemetry) -> None:
    store, stub = stubbed(telemetry)
    stub.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")
    with stub, pytest.raises(FenceBusy) as busy:
        store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    assert str(busy.value) == f"fence {store.external_key(STEP)} refused the claim"


def test_complete_failing_on_the_store_releases_the_claim(telemetry: Telemetry) -> None:
    # Given claim succeeds, complete is throttled, and the release succeeds
    store, stub = stubbed(telemetry)
    key = store.external_key(STEP)
    stub.add_response(
        "update_item",
        {
            "Attributes": {
                "id": {"S": key},
                "state": {"S": "IN_PROGRESS"},
                "fencing_token": {"N": "1"},
                "owner": {"S": "A"},
                "lease_expires": {"N": "1800000030"},
            }
        },
    )
    stub.add_client_error("update_item", service_error_code="ThrottlingException")
    stub.add_response("update_item", {})
    # When the step runs, Then the retryable TransientError propagates after the release
    with stub, pytest.raises(TransientError):
        store.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=lambda key: {"ok": 1})
    stub.assert_no_pending_responses()


def test_read_maps_store_errors(telemetry: Telemetry) -> None:
    store, stub = stubbed(telemetry)
    stub.add_client_error("get_item", service_error_code="InternalServerError", http_status_code=500)
    with stub, pytest.raises(TransientError):
        store.read(STEP)


def test_a_lease_must_be_positive(fences: FenceStore) -> None:
    with pytest.raises(ValueError, match=r"^lease_seconds must be positive, got 0$"):
        fences.claim(STEP, attempt_id="A", lease_seconds=0)
    assert fences.claim(STEP, attempt_id="A", lease_seconds=0.5).won


def claimed_response(store: FenceStore, token: int = 1) -> dict[str, Any]:
    return {
        "Attributes": {
            "id": {"S": store.external_key(STEP)},
            "state": {"S": "IN_PROGRESS"},
            "fencing_token": {"N": str(token)},
            "owner": {"S": "A"},
            "lease_expires": {"N": "1800000030"},
        }
    }


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"service_error_code": "ThrottlingException"}, TransientError),
        (
            {
                "service_error_code": "TransactionCanceledException",
                "modeled_fields": {
                    "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]
                },
            },
            TransientError,
        ),
        (
            {
                "service_error_code": "TransactionCanceledException",
                "modeled_fields": {
                    "CancellationReasons": [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}]
                },
            },
            EffectConditionFailed,
        ),
    ],
)
def test_leased_atomic_completion_failures_release_and_map(
    telemetry: Telemetry, error: dict[str, Any], expected: type[Exception]
) -> None:
    # Given the claim succeeds and the completing transaction fails
    store, stub = stubbed(telemetry)
    stub.add_response("update_item", claimed_response(store))
    stub.add_client_error("transact_write_items", **error)
    stub.add_response("update_item", {})  # the release
    # When the step runs, Then the mapped error propagates after the claim is released
    with stub, pytest.raises(expected):
        store.run_leased(
            STEP, attempt_id="A", lease_seconds=LEASE, effect=lambda key: AtomicEffect({}, [counter_add("c")])
        )
    stub.assert_no_pending_responses()


def test_a_failed_release_does_not_hide_the_original_exception(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the effect fails and the release is throttled too
    store, stub = stubbed(make_telemetry())
    stub.add_response("update_item", claimed_response(store))
    stub.add_client_error("update_item", service_error_code="ThrottlingException")
    original = KeyError("the effect's own error")

    def effect(key: str) -> dict[str, Any]:
        raise original

    # Then the effect's exception is what propagates (the lease will simply expire)
    with stub, pytest.raises(KeyError) as raised:
        store.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=effect)
    assert raised.value is original
    # And a line says the release failed, for which step
    [line] = [line for line in read_emitted(capsys.readouterr().out).logs if "decision" not in line]
    assert (line["message"], line["step"]) == ("fence release failed; the lease will expire", STEP.step)


def test_lease_live_reflects_the_clock(fences: FenceStore, clock: FakeClock) -> None:
    record = fences.claim(STEP, attempt_id="A", lease_seconds=LEASE).record
    assert record.lease_live(clock())
    assert not record.lease_live(clock() + LEASE + 1)


@pytest.mark.parametrize(("lost", "call"), [(1, "claim"), (2, "completion")])
def test_a_fence_write_the_sdk_sent_again_after_it_landed_is_the_attempts_own(
    fences: FenceStore, ddb: Any, lost: int, call: str
) -> None:
    # Given the claim's (1st) or the completion's (2nd) UpdateItem lands but its answer is lost,
    # and botocore sends the call again
    attempts = lose_answer(ddb, "UpdateItem", attempt=lost)
    provider = Provider()
    # When the step runs; Then it completes once (no FenceBusy from its own lease, no StaleFence
    # from its own completion), with one effect
    outcome = fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=provider.pay)
    assert len(attempts) == 3, call  # claim, completion, and the lost one sent again
    assert outcome.fencing_token == 1
    assert provider.calls == [fences.external_key(STEP)]
    record = fences.read(STEP)
    assert record is not None
    assert (record.state, record.result) == (FenceState.COMPLETED, outcome.result)


def test_a_lease_ends_at_its_expiry_instant_exclusive(fences: FenceStore, clock: FakeClock) -> None:
    # Given attempt A's claim, live until claimed-at + LEASE
    start = clock()
    fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    # When B tries at the very instant it expires, Then A still holds it
    clock.now = start + LEASE
    with pytest.raises(FenceBusy):
        fences.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    # And an instant later B takes it over
    clock.now = start + LEASE + 0.001
    claim = fences.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    assert (claim.won, claim.takeover, claim.record.fencing_token) == (True, True, 2)
    assert claim.record.lease_expires == pytest.approx(start + 2 * LEASE + 0.001)


@pytest.mark.parametrize("ending", ["complete", "fail"])
def test_completing_or_failing_restamps_the_ttl_from_that_moment(
    fences: FenceStore, clock: FakeClock, ddb: Any, ending: str
) -> None:
    # Given a claim, and the step's work taking 500 s
    claim = fences.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    assert _expiration(ddb, fences) == int(clock()) + 3600
    clock.advance(500)
    # When it completes or fails
    if ending == "complete":
        fences.complete(STEP, fencing_token=claim.record.fencing_token, result={"ok": True}, attempt_id="A")
    else:
        fences.fail(STEP, fencing_token=claim.record.fencing_token, error=DemoOutOfStock("x"), attempt_id="A")
    # Then the record lives its whole TTL from the end, not from the claim
    assert _expiration(ddb, fences) == int(clock()) + 3600


def _expiration(ddb: Any, fences: FenceStore) -> int:
    item = ddb.get_item(TableName=FENCES, Key={"id": {"S": fences.fence(STEP).key.value}})["Item"]
    return int(item["expiration"]["N"])


class _LeavesKeysUnprocessed:
    """A DynamoDB client whose first BatchGetItem answers only the first key of each table and
    hands the rest back as UnprocessedKeys, as DynamoDB may under load."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.batch_calls = 0
        self.requests: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def batch_get_item(self, **params: Any) -> Any:
        self.batch_calls += 1
        self.requests.extend(params["RequestItems"].values())
        if self.batch_calls > 1:
            return self._client.batch_get_item(**params)
        first = {t: {**r, "Keys": r["Keys"][:1]} for t, r in params["RequestItems"].items()}
        rest = {t: {**r, "Keys": r["Keys"][1:]} for t, r in params["RequestItems"].items() if r["Keys"][1:]}
        response = self._client.batch_get_item(RequestItems=first)
        return {**response, "UnprocessedKeys": rest}


def test_read_many_reads_the_keys_dynamodb_left_unprocessed(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    # Given three completed steps
    steps = [StepId(token="dev.order-1.r1", step=name) for name in ("a", "b", "c")]
    client = _LeavesKeysUnprocessed(ddb)
    store = fence_store(client, telemetry, clock, ttl_seconds=3600)
    for step in steps:
        store.run_atomic(step, lambda: AtomicEffect({"ok": True}, []))
    # When they are read together and DynamoDB answers only part of the batch at first
    found = store.read_many(steps)
    # Then the rest is asked for again and every record comes back, each read consistent
    assert client.batch_calls == 2
    assert sorted(step.step for step in found) == ["a", "b", "c"]
    assert [request["ConsistentRead"] for request in client.requests] == [True, True]


def test_read_many_reads_up_to_100_records_in_one_call(fences: FenceStore) -> None:
    steps = [StepId(token="dev.order-1.r1", step=f"s{n}") for n in range(101)]
    assert fences.read_many(steps[:100]) == {}
    with pytest.raises(ValueError, match=r"^read_many reads at most 100 records, got 101$"):
        fences.read_many(steps)


class _Bare(BusinessError):
    """A subclass that skips BusinessError.__init__ (no ``message``, no ``details``)."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)


class _Unserialisable(BusinessError):
    def __init__(self) -> None:
        super().__init__("declined", details={"at": object()})


@pytest.mark.parametrize(
    ("error", "message"),
    [(_Bare("declined by the bank"), "declined by the bank"), (_Unserialisable(), "declined")],
)
def test_a_business_error_without_json_details_is_recorded_with_its_text_and_no_details(
    fences: FenceStore, error: BusinessError, message: str
) -> None:
    def decline(key: str) -> dict[str, Any]:
        raise error

    # When a step fails with it, and is replayed
    with pytest.raises(type(error)):
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=decline)
    with pytest.raises(type(error)) as replayed:
        fences.run_leased(STEP, attempt_id="B", lease_seconds=LEASE, effect=decline)
    # Then the replay carries its class, its text, and details it can hold (none)
    assert (str(replayed.value), replayed.value.details) == (message, {})
    record = fences.read(STEP)
    assert record is not None
    assert (record.error_type, record.error_message, record.error_details) == (
        type(error).__name__,
        message,
        {},
    )


class _Worded(BusinessError):
    """A subclass whose str() dresses its message: the record keeps the message itself."""

    def __str__(self) -> str:
        return f"[{self.message}]"


def test_a_failure_records_the_errors_message_not_its_dressed_text(fences: FenceStore) -> None:
    def decline(key: str) -> dict[str, Any]:
        raise _Worded("limit reached")

    with pytest.raises(_Worded):
        fences.run_leased(STEP, attempt_id="A", lease_seconds=LEASE, effect=decline)
    record = fences.read(STEP)
    assert record is not None
    assert record.error_message == "limit reached"
