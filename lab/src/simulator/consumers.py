"""SQS driven by hand: the Lambda event source mapping's receive, invoke, delete.

SQS has no poller here: `pump()` receives, invokes the consumer, deletes only what succeeded
(`batchItemFailures` stay, visible again at once), like the Lambda event source mapping; when the
consumer's invocation dies the whole batch stays (visible again after the queue's visibility
timeout, which the clock skips) and is reported failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emulator.shapes import failed_ids
from ops.invariants import peek_dead_letters
from simulator.clock import Clock
from simulator.events import ACCOUNT, REGION, sqs_record
from simulator.lambdas import LambdaError
from simulator.queues import ThrottledPoll


@dataclass(frozen=True)
class PumpResult:
    received: int
    failed: list[str]
    error: str | None = None  # the errorType when the consumer's invocation died (all failed)


class EventSourceMapping:
    """What `InProcessCloud` does to feed its queues to their consumers (a mixin)."""

    clock: Clock
    outputs: dict[str, str]
    delivered: dict[str, dict[str, str]]

    if TYPE_CHECKING:

        @property
        def sqs(self) -> Any: ...

        def invoke(self, output_prefix: str, event: Any) -> Any: ...

    def send(self, queue_output: str, body: Any) -> str:
        text = body if isinstance(body, str) else json.dumps(body)
        return str(self.sqs.send_message(QueueUrl=self.outputs[queue_output], MessageBody=text)["MessageId"])

    def receive_batch(
        self, queue_output: str, *, batch_size: int = 10
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One receive as the event source mapping does it: the messages and their SQS event."""
        messages: list[dict[str, Any]] = self.sqs.receive_message(
            QueueUrl=self.outputs[queue_output],
            MaxNumberOfMessages=batch_size,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        queue_arn = self._queue_arn(queue_output)
        seen = self.delivered.setdefault(queue_output, {})
        for message in messages:
            seen.setdefault(message["MessageId"], message["Body"])
        return messages, {"Records": [sqs_record(m, queue_arn=queue_arn) for m in messages]}

    def pump(self, queue_output: str, function_prefix: str, *, batch_size: int = 10) -> PumpResult:
        """Receive once, invoke the consumer with the batch, delete only the records that succeeded;
        failed ones are made visible again at once (the visibility timeout, fast-forwarded).

        When the consumer's invocation fails (a crash or an unhandled error), nothing is deleted:
        the whole batch is visible again, every record is reported failed with `error` set, and
        the clock moves by the queue's visibility timeout, the time SQS keeps a dead invocation's
        batch hidden (the claims the dead invocation left expire meanwhile, as on AWS)."""
        url = self.outputs[queue_output]
        messages, event = self.receive_batch(queue_output, batch_size=batch_size)
        if not messages:
            return PumpResult(received=0, failed=[])
        try:
            response = self.invoke(function_prefix, event)
        except LambdaError as error:
            for message in messages:
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            self.clock.advance(self._visibility_timeout(url))
            return PumpResult(
                received=len(messages),
                failed=sorted(m["MessageId"] for m in messages),
                error=error.error_type,
            )
        batch = {m["MessageId"] for m in messages}
        failed = failed_ids(response, batch)
        if failed is None:  # an answer Lambda cannot read fails the whole batch, as on AWS
            failed = batch
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return PumpResult(received=len(messages), failed=sorted(failed))

    def drain(self, queue_output: str, function_prefix: str, *, max_rounds: int = 20) -> int:
        handled = 0
        for _ in range(max_rounds):
            result = self.pump(queue_output, function_prefix)
            if result.received == 0:
                return handled
            handled += result.received
        return handled

    def _visibility_timeout(self, url: str) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
        return int(attributes["Attributes"].get("VisibilityTimeout", 30))

    def _queue_arn(self, queue_output: str) -> str:
        name = self.outputs[queue_output].rsplit("/", 1)[-1]
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"

    def messages(self, queue_output: str) -> list[dict[str, Any]]:
        """Peek at a queue (e.g. a DLQ) without consuming it."""
        return [vars(d) for d in peek_dead_letters(self.sqs, self.outputs[queue_output], queue_output)]

    def throttled_poll(self, queue_output: str, *, batch_size: int = 10) -> ThrottledPoll:
        """One poll of the event source mapping whose function is throttled: the batch is received
        (ApproximateReceiveCount + 1) but never invoked, and comes back once the queue's
        visibility timeout has passed (the clock moves by it). Past maxReceiveCount, the next
        receive moves the messages to the DLQ."""
        messages, _ = self.receive_batch(queue_output, batch_size=batch_size)
        if messages:
            self.clock.advance(self._visibility_timeout(self.outputs[queue_output]))
        return ThrottledPoll(
            message_ids=tuple(m["MessageId"] for m in messages),
            receive_counts=tuple(int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages),
        )
