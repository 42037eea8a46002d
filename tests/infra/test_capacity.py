"""The capacity plan (infra/capacity.py): its derivations hold, and every stage's templates carry
exactly the settings derived from that stage's cdk.json entry."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from infra import manifest
from infra.capacity import (
    MAX_RECEIVE_COUNT,
    PROVIDER_CALL_SECONDS,
    STEP_SECONDS,
    THROTTLE_BACKOFF_SCHEDULE,
    THROTTLE_STORM_SECONDS,
    TRANSIENT_RECEIVES,
    TRANSITIONS_PER_ORDER,
    WORKER_SECONDS_PER_MESSAGE,
    CapacityError,
    CapacityPlan,
    StageCapacity,
    plan,
    quota,
    stage_capacity,
    throttle_backoff_seconds,
    visibility_timeout_seconds,
    worker_seconds_per_message,
)
from infra.config import CONTEXT_KEY, WorkflowType, load_config
from infra.sizing import QUEUE_CONSUMERS, functions_for
from simulator.synth import cdk_context
from simulator.templates import resources_of_type, state_machine_definition
from tests.infra.conftest import SERVICE, STAGES, stack


def _plan(stage: str) -> CapacityPlan:
    context = cdk_context(stage)[CONTEXT_KEY]
    return plan(stage_capacity(context, stage), load_config(context, stage).workflow)


def _functions(template: dict[str, Any], stage: str) -> dict[str, dict[str, Any]]:
    """Function name (without the stage prefix) -> properties, and each logical id -> name."""
    return {
        str(resource["Properties"]["FunctionName"]).removeprefix(f"{SERVICE}-{stage}-"): {
            "LogicalId": logical_id,
            **resource,
        }
        for logical_id, resource in resources_of_type(template, "AWS::Lambda::Function").items()
    }


@pytest.mark.parametrize("stage", STAGES)
def test_event_source_mappings_carry_the_planned_batch_and_maximum_concurrency(stage: str) -> None:
    # Given the stage's plan and its synthesized app template
    capacity = _plan(stage)
    template = stack(stage, "app")
    by_logical_id = {f["LogicalId"]: name for name, f in _functions(template, stage).items()}
    # When each mapping is traced to its function
    mappings = {
        by_logical_id[m["Properties"]["FunctionName"]["Ref"]]: m["Properties"]
        for m in resources_of_type(template, "AWS::Lambda::EventSourceMapping").values()
    }
    # Then each queue consumer has the plan's batch, window and maximum concurrency
    assert set(mappings) == set(QUEUE_CONSUMERS.values())
    for name, props in mappings.items():
        assert props["BatchSize"] == capacity.batch_size_of(name)
        assert props.get("MaximumBatchingWindowInSeconds", 0) == capacity.batch_window_seconds
        assert props["ScalingConfig"] == {"MaximumConcurrency": capacity.max_concurrency[name]}
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


@pytest.mark.parametrize("stage", STAGES)
def test_reserved_concurrency_only_where_the_plan_puts_it(stage: str) -> None:
    capacity = _plan(stage)
    reserved = {
        name: f["Properties"]["ReservedConcurrentExecutions"]
        for name, f in _functions(stack(stage, "app"), stage).items()
        if "ReservedConcurrentExecutions" in f["Properties"]
    }
    assert reserved == dict(capacity.reserved_concurrency)
    # The ESM never invokes into its own function's throttle: reserved >= MaximumConcurrency.
    assert reserved["worker"] >= capacity.max_concurrency["worker"]
    # The account keeps the unreserved concurrency Lambda requires.
    unreserved = capacity.capacity.account_concurrency - sum(reserved.values())
    assert unreserved >= quota("lambda_unreserved_minimum")


@pytest.mark.parametrize("stage", STAGES)
def test_queues_carry_the_planned_receive_count_and_visibility(stage: str) -> None:
    queues = {
        str(q["Properties"]["QueueName"]): q["Properties"]
        for q in resources_of_type(stack(stage, "data"), "AWS::SQS::Queue").values()
    }
    functions = functions_for(_plan(stage).workflow)
    for queue, consumer in QUEUE_CONSUMERS.items():
        props = queues[f"retrysafe-{stage}-{queue}"]
        assert props["RedrivePolicy"]["maxReceiveCount"] == _plan(stage).max_receive_count
        assert props["VisibilityTimeout"] == visibility_timeout_seconds(functions[consumer].timeout_seconds)


def test_transitions_per_order_is_the_happy_path_of_the_synthesized_workflow() -> None:
    # Given the synthesized state machine (the tasks' ARNs do not matter here)
    template = stack("dev", "app")
    names = {f"retrysafe-dev-{name}": name for name in _functions(template, "dev")}
    asl = state_machine_definition(template, names)
    # When the happy path is walked from StartAt along Next
    state, entered = asl["StartAt"], 0
    while state is not None:
        entered += 1
        state = asl["States"][state].get("Next")
    # Then the derivation's transitions per order match
    assert entered == TRANSITIONS_PER_ORDER


def test_max_receive_count_outlasts_the_throttle_storm_plus_transient_failures() -> None:
    throttled = MAX_RECEIVE_COUNT - TRANSIENT_RECEIVES
    assert sum(throttle_backoff_seconds(n) for n in range(1, throttled + 1)) >= THROTTLE_STORM_SECONDS
    # and not one receive more than the storm needs
    assert sum(throttle_backoff_seconds(n) for n in range(1, throttled)) < THROTTLE_STORM_SECONDS


@pytest.mark.parametrize("stage", STAGES)
def test_the_plan_admits_no_more_than_every_downstream_limit_allows(stage: str) -> None:
    capacity = _plan(stage)
    worker_rate = capacity.max_concurrency["worker"] / worker_seconds_per_message(capacity.workflow)
    charge_rate = capacity.reserved_concurrency["charge-payment"] / PROVIDER_CALL_SECONDS
    provider = capacity.capacity.provider_requests_per_second
    # The worker's admission stays under the provider's limit, and the charge step can carry it.
    assert worker_rate <= provider
    assert worker_rate <= charge_rate <= provider
    assert worker_rate <= quota("start_execution_refill")
    assert worker_rate * TRANSITIONS_PER_ORDER <= quota("state_transition_refill")


def test_an_account_too_small_for_the_reservations_fails_the_synth() -> None:
    with pytest.raises(CapacityError, match="unreserved"):
        plan(StageCapacity(account_concurrency=120, provider_requests_per_second=100))


def test_a_stage_without_a_capacity_entry_is_an_error_naming_it() -> None:
    with pytest.raises(CapacityError, match=r"retrysafe\.stages\.dev\.capacity"):
        stage_capacity({"stages": {"dev": {}}}, "dev")


@pytest.mark.parametrize("stage", STAGES)
def test_the_worker_gets_the_backoff_schedule_that_max_receive_count_is_sized_for(stage: str) -> None:
    worker = _functions(stack(stage, "app"), stage)["worker"]
    variables = worker["Properties"]["Environment"]["Variables"]
    assert variables["THROTTLE_BACKOFF_SECONDS"] == ",".join(map(str, THROTTLE_BACKOFF_SCHEDULE))
    assert len(THROTTLE_BACKOFF_SCHEDULE) == MAX_RECEIVE_COUNT


def test_every_provider_step_of_the_declaration_is_capped_not_a_named_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a service whose provider step (leased, with a reconcile) is named otherwise (ChargeCard)
    step = next(s for s in manifest.steps() if s.reconcile is not None)
    renamed = dataclasses.replace(step, name="ChargeCard", next=None, catch={})
    monkeypatch.setattr(manifest, "steps", lambda: (renamed,))
    # Then its function gets the provider cap
    reserved = _plan("dev").reserved_concurrency
    assert set(reserved) == {"worker", manifest.step_function(renamed)}
    assert reserved[manifest.step_function(renamed)] >= 1


def test_an_express_run_is_timed_with_a_provider_call_for_every_provider_step_not_a_named_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a service whose happy path is one provider step (leased, with a reconcile) named
    # otherwise (ChargeCard) and one step that only touches DynamoDB
    declared = manifest.steps()
    provider = dataclasses.replace(
        next(s for s in declared if s.reconcile is not None), name="ChargeCard", next=None, catch={}
    )
    plain = dataclasses.replace(next(s for s in declared if s.kind == "atomic"), name="HoldSeat", catch={})
    monkeypatch.setattr(manifest, "steps", lambda: (plain, provider))
    # When an Express worker's time per message is derived
    seconds = worker_seconds_per_message(WorkflowType.EXPRESS)
    # Then the provider step counts a provider call, the other a DynamoDB step
    assert seconds == pytest.approx(WORKER_SECONDS_PER_MESSAGE + PROVIDER_CALL_SECONDS + STEP_SECONDS)
    assert _plan("dev-express").reserved_concurrency.keys() == {"worker", "charge-card"}
