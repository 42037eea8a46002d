"""An event consumer of a service's declaration (`reliability.declaration.Consumer`): its effect
applied exactly once per fact, and only to a fact it could verify.

The fact is the event's business identity (`event.fact()`: type, business id, run) in this
consumer's stage, never the `event_id` the event declares: the same fact under another id
(another stage's, a hand-made redrive) is the same record. The effect `(ports, body) -> writes`
commits with the dedup record on (fact, consumer) in one transaction (`ConsumerDedup`), and sees
that derived id as the body's `event_id`, so the items it keys by event are the fact's too.

Before that the event is checked: another stage's event is refused here; what the service knows
of the item the event names (it exists, the event's run and terms are its) is the service's hook,
`verify`. A refusal is a `PoisonMessage` (dead-lettered with its reason); a service whose check
raises its own errors lists them in `refusals`. So is a put-once write of the effect
(`attribute_not_exists`, no `BusinessError` attached) refused because its item exists
(`PUT_ONCE_REFUSED`): no retry can pass it. Any other refused condition is raised, and retried.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from reliability.dedup import ConsumerDedup
from reliability.effects import AtomicEffect, Write
from reliability.errors import EffectConditionFailed, PoisonMessage
from reliability.saga import resolve

if TYPE_CHECKING:
    from reliability.declaration import Service
    from reliability.keys import Fact


class ConsumedEvent(Protocol):
    """What a consumer reads of an event (a pydantic model has `model_dump`)."""

    @property
    def stage(self) -> str | None: ...

    def fact(self) -> Fact: ...

    def model_dump(self, *, mode: str) -> dict[str, Any]: ...


Ports = TypeVar("Ports")
Event = TypeVar("Event", bound=ConsumedEvent)
ConsumerEffect = Callable[[Any, Mapping[str, Any]], list[Write]]
# The dead-letter reason of an event whose effect's put-once item already exists (the lab tells a
# copy its dedup should have recognised by it).
PUT_ONCE_REFUSED = "an item the effect puts once already exists (a copy of an applied event?)"


def effect_of(service: Service, name: str) -> ConsumerEffect:
    """The declared consumer's effect, resolved from its dotted path."""
    effect: ConsumerEffect = resolve(service.consumer(name).effect)
    return effect


@dataclass
class EventConsumer(Generic[Ports, Event]):
    """Applies each fact exactly once (module doc); `ports` is what the effect gets."""

    # The service's own errors that mean "not a fact this consumer may apply" (from `verify`).
    refusals: ClassVar[tuple[type[Exception], ...]] = ()

    name: str
    effect: ConsumerEffect
    ports: Ports
    dedup: ConsumerDedup

    def verify(self, event: Event) -> None:
        """The service's check of the event against the item it names (the hook): raise
        `PoisonMessage`, or one of `refusals`, when it is not a fact of this stage's items."""

    def result(self, event: Event) -> dict[str, Any]:  # noqa: ARG002 - a hook
        """What the dedup record stores as the applied effect's result."""
        return {}

    def apply(self, event: Event) -> bool:
        """True when applied now, False on a dedup hit; PoisonMessage when it cannot be verified."""
        stage = self.dedup.stage
        if event.stage is not None and event.stage != stage:
            raise PoisonMessage(f"an event of stage {event.stage!r}; this consumer is stage {stage!r}")
        try:
            self.verify(event)
        except self.refusals as error:
            raise PoisonMessage(str(error)) from error
        fact = event.fact()
        body = {**event.model_dump(mode="json"), "event_id": self.dedup.fact_id(fact), "stage": stage}
        writes: list[Write | dict[str, Any]] = []

        def build() -> AtomicEffect:
            writes[:] = self.effect(self.ports, body)
            return AtomicEffect(result=self.result(event), writes=writes)

        try:
            outcome = self.dedup.apply_atomic(fact, build)
        except EffectConditionFailed as refused:
            if not _puts_once(writes[refused.index]):
                raise
            # A retry meets the same item, so it would only run out its receives and land in the
            # DLQ with no reason. Typically a copy that came back after its dedup record expired
            # (a redrive past the TTL) and found the item its first delivery wrote.
            raise PoisonMessage(f"{PUT_ONCE_REFUSED} (write {refused.index}); nothing applied") from refused
        return not outcome.skipped


def _puts_once(write: Write | Mapping[str, Any]) -> bool:
    entry = write.entry if isinstance(write, Write) else write
    put = entry.get("Put") or {}
    return "attribute_not_exists(" in str(put.get("ConditionExpression", ""))
