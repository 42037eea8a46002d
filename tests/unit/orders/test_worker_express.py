"""On Express the worker waits for the run's execution: one that did not succeed keeps the message
on the capacity plan's backoff (the queue runs the order again under the same token), and on the
last receive it goes to the DLQ with the execution's error as its reason."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from infra.capacity import MAX_RECEIVE_COUNT, THROTTLE_BACKOFF_SCHEDULE
from orders.domain import ExecutionEnd
from orders.errors import ExecutionFailed
from orders.messages import ORDER_MESSAGES
from reliability.errors import PoisonMessage
from reliability.queue_handlers import start_run
from tests.unit.orders.test_worker_throttle import _record, _Runtime, _Settings, _Starter

END = ExecutionEnd(
    arn="arn:aws:states:us-east-1:123456789012:express:m:o-1-r1:1",
    status="FAILED",
    started=0.0,
    stopped=80.0,
    error="FenceBusy",
    cause="step ChargePayment is in progress",
)


@dataclass
class _ExpressSettings(_Settings):
    max_receive_count: int = MAX_RECEIVE_COUNT


@pytest.mark.parametrize("receive_count", [1, 2, MAX_RECEIVE_COUNT - 1])
def test_a_failed_run_keeps_the_message_for_the_queue_to_run_it_again(receive_count: int) -> None:
    # Given an Express execution of the run that ended FAILED
    runtime = _Runtime(workflow_starter=_Starter(ExecutionFailed(END)), settings=_ExpressSettings())
    # When the worker handles the record (not its last receive)
    with pytest.raises(ExecutionFailed, match="execution FAILED: FenceBusy"):
        start_run(runtime, _record(receive_count), ORDER_MESSAGES)  # type: ignore[arg-type]
    # Then the record fails and comes back after the schedule's backoff, not the visibility timeout
    (_, change) = runtime.sqs.calls[-1]
    assert change["VisibilityTimeout"] == THROTTLE_BACKOFF_SCHEDULE[receive_count - 1]


def test_a_run_that_fails_on_the_last_receive_is_dead_lettered_with_the_executions_error() -> None:
    runtime = _Runtime(workflow_starter=_Starter(ExecutionFailed(END)), settings=_ExpressSettings())
    with pytest.raises(PoisonMessage) as raised:
        start_run(runtime, _record(MAX_RECEIVE_COUNT), ORDER_MESSAGES)  # type: ignore[arg-type]
    assert raised.value.reason == "execution FAILED: FenceBusy: step ChargePayment is in progress"
    assert runtime.sqs.calls == []  # no backoff: it leaves the queue now


def test_a_timed_out_run_says_so_without_an_error_name() -> None:
    end = ExecutionEnd(arn="a", status="TIMED_OUT", started=0.0, stopped=300.0)
    assert end.reason == "execution TIMED_OUT"
    assert not end.succeeded
