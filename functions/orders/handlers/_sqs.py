"""One factory for every SQS-triggered function: Powertools batch processing with partial
failures, poison records dead-lettered with a reason (reliability.batch), the usual decorators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orders.config import QueueFedSettings
from orders.observability import logger, tracer
from orders.runtime import current
from reliability.batch import process_batch
from reliability.telemetry import metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from collections.abc import Callable

    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from orders.runtime import Runtime

    RecordHandler = Callable[[Runtime[Any], SQSRecord, LambdaContext], Any]
    BatchHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def sqs_handler(*, settings: type[QueueFedSettings], record_handler: RecordHandler) -> BatchHandler:
    """A batch handler for a function of kind `settings`; its settings name the dead-letter queue
    and the source its reasons carry."""

    @logger.inject_lambda_context
    @metrics_per_invocation
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        runtime = current(settings)
        return process_batch(
            event,
            handler=lambda record: record_handler(runtime, record, context),
            dead_letters=runtime.dead_letters(),
            telemetry=runtime.telemetry,
            context=context,
        )

    handler.__name__ = handler.__qualname__ = settings.__name__.removesuffix("Settings").lower()
    batch_handler: BatchHandler = handler  # Powertools' handler decorators are annotated `-> Any`
    return batch_handler
