"""SQS as time passes and as the event source mapping meets a throttled function.

- Retention: when the clock is moved (`InProcessCloud.advance`), a queue loses the messages older
  than its MessageRetentionPeriod from the template (`simulator.patches.drop_expired`). A queue an
  event source mapping polls keeps nothing for days on AWS (the mapping receives a message within
  seconds; one that keeps failing reaches the DLQ after maxReceiveCount receives), so its messages
  age out only in a jump with the pollers off (`advance(..., pollers_off=True)`); DLQs and queues
  nothing polls age out in every jump.
- Throttled polls: when Lambda throttles the function, the event source mapping has already
  received the batch; it cannot invoke, so the messages stay hidden for the visibility timeout
  and come back with ApproximateReceiveCount one higher, without the function having run. After
  maxReceiveCount receives the next receive moves them to the DLQ (moto's redrive policy).
"""

from __future__ import annotations

from dataclasses import dataclass

from moto.sqs.models import sqs_backends

from simulator.patches import drop_expired


def expire_messages(account: str, region: str, now: float, *, polled: frozenset[str] = frozenset()) -> int:
    """Apply retention at `now` to every queue but the `polled` ones (queue names); returns how many
    messages vanished."""
    backend = sqs_backends[account][region]
    return sum(drop_expired(q, now) for name, q in list(backend.queues.items()) if name not in polled)


@dataclass(frozen=True)
class ThrottledPoll:
    """One receive the event source mapping could not hand to its throttled function."""

    message_ids: tuple[str, ...]
    receive_counts: tuple[int, ...]  # ApproximateReceiveCount of each, after this receive
