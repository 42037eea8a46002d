"""What each owner transition leaves on the record, and what its decision line says.

An operator reads a fence by its record (``make fence``, the invariant checker) and by the
decision lines of the attempts that touched it; both are the store's answer, so both are pinned.
"""

from __future__ import annotations

from typing import Any

import pytest

from reliability import FenceState, FenceStore, StepId
from reliability.errors import StaleFence
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined
from reliability_helpers import FENCES, FakeClock, make_telemetry, read_emitted

STEP = StepId(token="dev.order-7.r1", step="charge-payment")
LEASE = 30.0


@pytest.fixture
def store(ddb: Any, clock: FakeClock) -> FenceStore:
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=make_telemetry(),
        namespace="fence",
        clock=clock,
    )


def logging(ddb: Any, clock: FakeClock) -> FenceStore:
    """A store whose decision lines this test's capsys reads (a logger writes to the stdout of the
    test that first built it, so it is built in the test's body)."""
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=make_telemetry(),
        namespace="fence",
        clock=clock,
    )


def lines(capsys: pytest.CaptureFixture[str], decision: str) -> list[dict[str, Any]]:
    return [
        line for line in read_emitted(capsys.readouterr().out).decisions() if line["decision"] == decision
    ]


def stored(ddb: Any, store: FenceStore) -> dict[str, Any]:
    item: dict[str, Any] = ddb.get_item(TableName=FENCES, Key={"id": {"S": store.external_key(STEP)}})["Item"]
    return item


@pytest.mark.parametrize("ending", ["complete", "fail"])
def test_completing_or_failing_ends_the_lease_and_forgets_the_owner(
    store: FenceStore, ddb: Any, ending: str
) -> None:
    # Given attempt A holds the claim
    token = store.claim(STEP, attempt_id="A", lease_seconds=LEASE).record.fencing_token
    # When it completes or fails
    if ending == "complete":
        store.complete(STEP, fencing_token=token, result={"ok": True}, attempt_id="A")
    else:
        store.fail(STEP, fencing_token=token, error=DemoOutOfStock("none"), attempt_id="A")
    # Then the terminal record holds no owner and no lease (nothing is held any more)
    item = stored(ddb, store)
    assert item["state"]["S"] == ("COMPLETED" if ending == "complete" else "FAILED")
    assert "owner" not in item
    assert "lease_expires" not in item


def test_a_failure_says_which_attempt_failed_with_what(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    token = store.claim(STEP, attempt_id="A", lease_seconds=LEASE).record.fencing_token
    capsys.readouterr()
    store.fail(STEP, fencing_token=token, error=DemoPaymentDeclined("card"), attempt_id="A")
    [line] = lines(capsys, "FenceFailed")
    assert (line["attempt"], line["error_type"], line["step"]) == (
        "A",
        "DemoPaymentDeclined",
        "charge-payment",
    )


def test_a_release_says_which_attempt_let_go_of_which_token(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    token = store.claim(STEP, attempt_id="A", lease_seconds=LEASE).record.fencing_token
    capsys.readouterr()
    assert store.release(STEP, fencing_token=token, attempt_id="A") is True
    [line] = lines(capsys, "FenceReleased")
    assert (line["attempt"], line["fencing_token"]) == ("A", token)


def test_a_stale_attempt_is_told_who_holds_the_fence_now(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    # Given A's lease passed and B took over
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    capsys.readouterr()
    # When A completes late, Then StaleFence says so, and the line names A's token and the current one
    with pytest.raises(StaleFence) as stale:
        store.complete(STEP, fencing_token=1, result={"by": "A"}, attempt_id="A")
    assert str(stale.value) == (
        "step charge-payment: fencing token 1 is no longer current; this attempt's effect was not recorded"
    )
    [line] = lines(capsys, "FenceStale")
    assert (line["attempt"], line["fencing_token"], line["current_token"], line["current_state"]) == (
        "A",
        1,
        2,
        FenceState.IN_PROGRESS.value,
    )


def test_a_stale_write_on_a_record_that_is_gone_says_there_is_none(store: FenceStore, ddb: Any) -> None:
    # Given a claimed record that an operator deleted (a TTL expiry does the same)
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    ddb.delete_item(TableName=FENCES, Key={"id": {"S": store.external_key(STEP)}})
    # When its owner completes, Then StaleFence: nothing to complete, nothing written
    with pytest.raises(StaleFence):
        store.complete(STEP, fencing_token=1, result={"by": "A"}, attempt_id="A")
    assert store.read(STEP) is None
