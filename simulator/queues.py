"""SQS as time passes and as the event source mapping meets a throttled function.

- Retention: every queue (DLQs included) loses the messages older than its
  MessageRetentionPeriod from the template (`simulator.patches.drop_expired`), when the clock is
  moved (`InProcessCloud.advance`) and before each receive.
- Throttled polls: when Lambda throttles the function, the event source mapping has already
  received the batch; it cannot invoke, so the messages stay hidden for the visibility timeout
  and come back with ApproximateReceiveCount one higher, without the function having run. After
  maxReceiveCount receives the next receive moves them to the DLQ (moto's redrive policy).
"""

from __future__ import annotations

from dataclasses import dataclass

from moto.sqs.models import sqs_backends

from simulator.patches import drop_expired


def expire_messages(account: str, region: str, now: float) -> int:
    """Apply every queue's retention at `now`; returns how many messages vanished."""
    backend = sqs_backends[account][region]
    return sum(drop_expired(queue, now) for queue in list(backend.queues.values()))


@dataclass(frozen=True)
class ThrottledPoll:
    """One receive the event source mapping could not hand to its throttled function."""

    message_ids: tuple[str, ...]
    receive_counts: tuple[int, ...]  # ApproximateReceiveCount of each, after this receive
