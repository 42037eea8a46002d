"""The Lambda handlers a service's workflow needs besides its queue-fed ones
(reliability.queue_handlers), as factories its handler modules call: a fenced step of the saga
(`step_handler`: every step function on one handler, the function's settings say which step) and
the sweep of entities stranded in ACCEPTED (`sweep_handler`, on a schedule).

Each takes `runtime`, how the handler gets this invocation's composition root; the protocols
below say what each needs of it. Neither imports the batch utilities (the queue-fed ones do), and
the sweep not the fences either (the saga, loaded by `step_handler` when a step module calls it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from reliability.observability import logger, tracer
from reliability.telemetry import ENTITY_KEY, Decision, metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the modules are not loaded at run time
    from datetime import datetime

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from reliability.runs import FenceStore
    from reliability.saga import Saga, StepRequest
    from reliability.telemetry import Telemetry
    from reliability.workflow_runs import Reruns

Handler = Callable[[dict[str, Any], "LambdaContext"], dict[str, Any]]
# The step the sweep's decisions name.
SWEEP_STEP = "SweepAccepted"


class StepSettings(Protocol):
    @property
    def step_name(self) -> str: ...


class StepRuntime(Protocol):
    @property
    def settings(self) -> StepSettings: ...
    @property
    def saga(self) -> Any: ...  # the service's context object its effects get

    def fences(self, namespace: str) -> FenceStore: ...


class SweepSettings(Protocol):
    @property
    def stranded_after_seconds(self) -> int: ...


class SweepRuntime(Protocol):
    @property
    def settings(self) -> SweepSettings: ...
    @property
    def telemetry(self) -> Telemetry: ...
    @property
    def reruns(self) -> Reruns[Any]: ...

    def now(self) -> datetime: ...


def step_handler(
    *, runtime: Callable[[], StepRuntime], saga: Saga[Any, Any], request_type: type[StepRequest] | None = None
) -> Handler:
    """The saga's step functions: each invocation runs the function's step (its settings'
    `step_name`) behind its fence, the lease its remaining time. `request_type`: the service's
    own request (a subclass that parses its run), if it has one. The declared steps' effects are
    resolved here, at init (the cold start), rather than on the first invocation."""
    from reliability.saga import SAGA_NAMESPACE, StepRequest  # noqa: PLC0415 - the sweep never loads the fences

    build_request = request_type or StepRequest
    saga.steps()
    id_field = saga.service.entity.id_field

    @logger.inject_lambda_context(correlation_id_path="token")
    @metrics_per_invocation
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        current = runtime()
        name = current.settings.step_name
        # every line of the step names its entity by the telemetry's key (its decision lines carry
        # the same key: under the entity's own field name they would say it twice)
        logger.append_keys(step=name, **{ENTITY_KEY: event.get(id_field)})
        request = build_request(
            state=event,
            attempt_id=context.aws_request_id,
            remaining_seconds=context.get_remaining_time_in_millis() / 1000,
        )
        return saga.run_step(current.saga, current.fences(SAGA_NAMESPACE), name, request)

    step: Handler = handler  # Powertools' handler decorators are annotated `-> Any`
    return step


def sweep_handler(*, runtime: Callable[[], SweepRuntime]) -> Handler:
    """Re-send the message of every entity stranded in ACCEPTED (`Reruns.resend_stranded`: the
    API died between the entity write and the queue send, and its client never retried); each
    one re-sent is one `StrandedRun` decision (a log line with the entity's keys, and a count
    the dashboard alarms on)."""

    @logger.inject_lambda_context
    @metrics_per_invocation
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(_event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
        current = runtime()
        stranded = current.reruns.resend_stranded(
            now=current.now(), bound_seconds=current.settings.stranded_after_seconds
        )
        for found in stranded:
            with current.telemetry.bind(entity_id=found.entity_id, run=found.run):
                current.telemetry.decision(Decision.STRANDED_RUN, key=found.idempotency_key, step=SWEEP_STEP)
        return {"resent": [found.entity_id for found in stranded]}

    sweep: Handler = handler
    return sweep
