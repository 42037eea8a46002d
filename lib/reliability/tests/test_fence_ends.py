"""What each owner transition leaves on the record, and what its decision line says.

An operator reads a fence by its record (``make fence``, the invariant checker) and by the
decision lines of the attempts that touched it; both are the store's answer, so both are pinned.
"""

from __future__ import annotations

from typing import Any

import pytest

from reliability import AtomicEffect, FenceState, FenceStore, StepId, Write
from reliability.errors import FenceBusy, StaleFence
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined
from reliability_helpers import FENCES, FakeClock, make_telemetry, put_stock, read_emitted, stock_decrement

STEP = StepId(token="dev.order-7.r1", step="pay")
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
        "pay",
    )


def test_a_leased_run_that_declines_says_which_attempt_failed(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    capsys.readouterr()

    def decline(key: str) -> dict[str, Any]:
        raise DemoPaymentDeclined("card")

    with pytest.raises(DemoPaymentDeclined):
        store.run_leased(StepId(STEP.token, "refund"), attempt_id="R", lease_seconds=LEASE, effect=decline)
    assert [line["attempt"] for line in lines(capsys, "FenceFailed")] == ["R"]


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
        "step pay: fencing token 1 is no longer current; this attempt's effect was not recorded"
    )
    [line] = lines(capsys, "FenceStale")
    assert (line["attempt"], line["fencing_token"], line["current_token"], line["current_state"]) == (
        "A",
        1,
        2,
        FenceState.IN_PROGRESS.value,
    )
    # And so is a late failure of that attempt
    with pytest.raises(StaleFence):
        store.fail(STEP, fencing_token=1, error=DemoOutOfStock("late"), attempt_id="A")
    assert [line["attempt"] for line in lines(capsys, "FenceStale")] == ["A"]


def test_a_stale_write_on_a_record_that_is_gone_says_there_is_none(store: FenceStore, ddb: Any) -> None:
    # Given a claimed record that an operator deleted (a TTL expiry does the same)
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    ddb.delete_item(TableName=FENCES, Key={"id": {"S": store.external_key(STEP)}})
    # When its owner completes, Then StaleFence: nothing to complete, nothing written
    with pytest.raises(StaleFence):
        store.complete(STEP, fencing_token=1, result={"by": "A"}, attempt_id="A")
    assert store.read(STEP) is None


def test_every_decision_line_names_the_attempt_and_what_it_found(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    atomic, held, flaky = (StepId(STEP.token, name) for name in ("record-entry", "ship", "publish"))
    capsys.readouterr()
    # Given a leased step: claimed, refused while held, taken over, completed, replayed
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    with pytest.raises(FenceBusy) as busy:
        store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    store.complete(STEP, fencing_token=2, result={"ok": True}, attempt_id="B")
    assert store.claim(STEP, attempt_id="C", lease_seconds=LEASE).won is False
    # And an atomic step run twice, one held by a lease, and a leased effect that fails transiently
    store.run_atomic(atomic, lambda: AtomicEffect({"ok": True}))
    store.run_atomic(atomic, lambda: AtomicEffect({"ok": True}))
    store.claim(held, attempt_id="D", lease_seconds=LEASE)
    with pytest.raises(FenceBusy) as busy_atomic:
        store.run_atomic(held, lambda: AtomicEffect({}))

    def boom(key: str) -> dict[str, Any]:
        raise RuntimeError("provider down")

    with pytest.raises(RuntimeError):
        store.run_leased(flaky, attempt_id="E", lease_seconds=LEASE, effect=boom)
    # Then each line says who decided, on which step, and what it found
    fields = ("attempt", "fencing_token", "owner", "state", "mode", "reason")
    decided = read_emitted(capsys.readouterr().out).decisions()
    assert {line["token"] for line in decided} == {STEP.token}  # every line names its run's token
    found = [(line["decision"], line["step"], *(line.get(name) for name in fields)) for line in decided]
    assert found == [
        ("FenceClaimed", "pay", "A", 1, None, None, None, None),
        ("FenceBusy", "pay", "B", None, "A", None, None, None),
        ("FenceTakeover", "pay", "B", 2, None, None, None, None),
        ("FenceCompleted", "pay", "B", 2, None, None, None, None),
        ("FenceSkipped", "pay", "C", None, None, "COMPLETED", None, None),
        ("FenceCompleted", "record-entry", None, None, None, None, "atomic", None),
        ("FenceSkipped", "record-entry", None, None, None, "COMPLETED", "atomic", None),
        ("FenceClaimed", "ship", "D", 1, None, None, None, None),
        ("FenceBusy", "ship", None, None, "D", None, "atomic", None),
        ("FenceClaimed", "publish", "E", 1, None, None, None, None),
        ("Retry", "publish", "E", 1, None, None, None, "RuntimeError"),
        ("FenceReleased", "publish", "E", 1, None, None, None, None),
    ]
    # And the refusals say until when, and by what
    assert str(busy.value) == f"step pay is held by another attempt until {clock() - 1}"
    assert str(busy_atomic.value) == "step ship is held by a leased attempt"


def test_a_decision_on_a_long_item_names_its_item_and_label(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a step of one item whose identity is too long for a readable key (the key is hashed)
    store = logging(ddb, clock)
    step = StepId(STEP.token, "reserve", item="item-" + "9" * 300)
    capsys.readouterr()
    store.claim(step, attempt_id="A", lease_seconds=LEASE)
    # Then the line carries what the hashed key no longer spells: the item and the label (the
    # namespace is the key's first segment, so the line leaves it out)
    [line] = lines(capsys, "FenceClaimed")
    assert line["key"].startswith("fence#-#r1#h:")
    assert line["item"] == step.item
    assert "namespace" not in line
    assert line["label"] == store.fence(step).key.label
    assert line["label"].startswith('{"item":"item-999')


def test_a_release_ends_the_lease_and_touches_nothing_else(
    store: FenceStore, clock: FakeClock, ddb: Any
) -> None:
    # Given a claim, and its attempt failing transiently 100 s later
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    claimed = stored(ddb, store)
    clock.advance(100)
    store.release(STEP, fencing_token=1, attempt_id="A")
    # Then only the lease, its owner and the write time changed: the TTL still counts from the claim
    released = stored(ddb, store)
    assert released["lease_expires"] == {"N": "0"}
    assert "owner" not in released
    assert released["updated_at"] == {"N": repr(clock())}
    unchanged = {
        name: value for name, value in claimed.items() if name not in ("lease_expires", "owner", "updated_at")
    }
    assert {name: released[name] for name in unchanged} == unchanged


def test_a_stale_release_says_which_attempt_it_was(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    capsys.readouterr()
    assert store.release(STEP, fencing_token=1, attempt_id="A") is False
    assert [(line["attempt"], line["current_token"]) for line in lines(capsys, "FenceStale")] == [("A", 2)]


def test_a_leased_runs_completion_and_release_name_its_attempt(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = logging(ddb, clock)
    capsys.readouterr()
    store.run_leased(STEP, attempt_id="L", lease_seconds=LEASE, effect=lambda key: {"ok": True})
    assert [line["attempt"] for line in lines(capsys, "FenceCompleted")] == ["L"]
    # And a completion the store refuses (a result that is not a mapping) releases under that name
    with pytest.raises(TypeError):
        store.run_leased(
            StepId(STEP.token, "ship"),
            attempt_id="M",
            lease_seconds=LEASE,
            effect=lambda key: ["not", "a", "mapping"],  # type: ignore[arg-type,return-value]
        )
    decided = read_emitted(capsys.readouterr().out).decisions()
    retry = [(line["attempt"], line["reason"]) for line in decided if line["decision"] == "Retry"]
    assert retry == [("M", "TypeError")]
    assert [line["attempt"] for line in decided if line["decision"] == "FenceReleased"] == ["M"]


class _RecordsReads:
    """A DynamoDB client that keeps every GetItem request."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.reads: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def get_item(self, **params: Any) -> Any:
        self.reads.append(params)
        return self._client.get_item(**params)


def test_a_read_of_a_record_is_consistent(ddb: Any, clock: FakeClock) -> None:
    # (an eventually consistent read could miss a claim or a completion just written)
    client = _RecordsReads(ddb)
    store = FenceStore(
        client=client,
        table_name=FENCES,
        ttl_seconds=60,
        telemetry=make_telemetry(),
        clock=clock,
        namespace="fence",
    )
    store.claim(STEP, attempt_id="A", lease_seconds=LEASE)
    record = store.read(STEP)
    assert record is not None
    assert [read.get("ConsistentRead") for read in client.reads] == [True]


def test_a_completion_whose_write_refuses_says_which_attempt_failed(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    # the effect's condition fails inside the completing transaction: the BusinessError it maps to
    # fails the fence on the way out, in the name of the attempt that completed
    store = logging(ddb, clock)
    put_stock(ddb, "item", 0)
    capsys.readouterr()

    def reserve(key: str) -> AtomicEffect:
        return AtomicEffect({"reserved": 1}, [Write(stock_decrement("item", 1), DemoOutOfStock("item"))])

    with pytest.raises(DemoOutOfStock):
        store.run_leased(STEP, attempt_id="R", lease_seconds=LEASE, effect=reserve)
    assert [(line["attempt"], line["error_type"]) for line in lines(capsys, "FenceFailed")] == [
        ("R", "DemoOutOfStock")
    ]
