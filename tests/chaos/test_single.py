"""Single faults: one crash at a point, the platform's own recovery (or an operator redrive), then
every invariant holds. The large set (every point of every function) is `make chaos`."""

from __future__ import annotations

import pytest

from chaos.cloud import ChaosCloud, chaos_cloud
from chaos.points import PointHit
from chaos.scenarios import place, verdict
from chaos.single import LOST, record_operators, run_operator_lost, run_single
from orders.errors import RerunRefused

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

# One crash per mechanism that heals it (the other crash points: `make chaos`, and the main-side
# replays of the mutant reproducers in test_mutants.py).
CASES = [
    # the client retries: the function died after storing the order, before sending its message
    ("completed", "api:after:DynamoDB.PutItem#2"),
    # SQS redelivers after the visibility timeout: died after starting the execution
    ("completed", "worker:after:SFN.StartExecution#1"),
    # Step Functions retries (Runtime.ExitError): the provider charged, the fence never completed
    ("completed", "charge-payment:fence:after-effect:ChargePayment#1"),
    # compensation: the decline was recorded, then ChargePayment died
    ("payment-declined", "charge-payment:after:DynamoDB.PutItem#2"),
]


@pytest.mark.parametrize(("kind", "label"), CASES, ids=[f"{k}/{p}" for k, p in CASES])
def test_one_crash_then_recovery_keeps_every_invariant(assembly, kind, label):
    result = run_single(assembly, kind, PointHit.parse(label))
    assert result.fired == [label]
    assert result.violations == []
    assert result.recovery.crashed_invocations == 1


# A lost answer at a conditional write, a transaction, a start and an operator's redrive: the SDK
# sends the same request again, which meets the first attempt's write (the rest: `make chaos`).
LOST_CASES = [
    ("completed", "api:after:DynamoDB.PutItem#1"),  # the HTTP lock, resent: the lock is its own
    ("completed", "charge-payment:after:DynamoDB.UpdateItem#1"),  # the fence claim, resent
    ("completed", "reserve-inventory:after:DynamoDB.TransactWriteItems#1"),  # one ClientRequestToken
    ("completed", "worker:after:SFN.StartExecution#1"),  # the same name and input: the same execution
]


@pytest.mark.parametrize(("kind", "label"), LOST_CASES, ids=[f"{k}/{p}" for k, p in LOST_CASES])
def test_a_lost_answer_then_the_sdk_s_resend_keeps_every_invariant(assembly, kind, label):
    result = run_single(assembly, kind, PointHit.parse(label), error=LOST)
    assert result.lost == [label]
    assert result.violations == []


@pytest.fixture(scope="module")
def operator_calls(assembly) -> list[PointHit]:
    return record_operators(assembly)


def test_the_operator_tools_calls_are_recorded_where_answers_are_lost(operator_calls):
    labels = {hit.label for hit in operator_calls}
    assert {
        "ops.rerun:after:DynamoDB.UpdateItem#1",  # make rerun's one guarded transition
        "ops.rerun:after:SQS.SendMessage#1",
        "ops.redrive:after:SFN.RedriveExecution#1",
        "ops.redrive:after:SQS.SendMessage#1",  # a DLQ message moved back
        "ops.redrive:after:SQS.DeleteMessage#1",
    } <= labels


def test_a_lost_answer_at_an_operator_s_redrive_is_resent_with_its_client_token(assembly, operator_calls):
    (redrive,) = [h for h in operator_calls if h.label == "ops.redrive:after:SFN.RedriveExecution#1"]
    result = run_operator_lost(assembly, redrive)
    assert result.lost == [redrive.label]
    assert result.violations == []


def test_a_tool_that_answers_refused_after_its_own_write_landed_is_a_violation(assembly, monkeypatch):
    # Given `make rerun` whose transition lands but which then reports RerunRefused (what a resend
    # of its conditional write that meets its own write would make of it)
    real = ChaosCloud.rerun

    def lands_then_refuses(cloud: ChaosCloud, order_id: str) -> object:
        real(cloud, order_id)
        raise RerunRefused(f"order {order_id} is ACCEPTED on run 2")

    monkeypatch.setattr(ChaosCloud, "rerun", lands_then_refuses)
    with chaos_cloud(assembly) as cloud:
        placed = place(cloud, "payment-declined", "lands-then-refuses")
        cloud.recover()
        assert placed.entity_id is not None
        cloud.rerun_entity(placed.entity_id)
        cloud.recover()
        judged = verdict(cloud, [placed])
    # Then the tool's answer disagrees with what it did, and the verdict says so
    assert any(
        "make rerun answered RerunRefused" in v and "but started run 2" in v for v in judged.violations
    )
