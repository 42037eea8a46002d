"""The one AWS call counter of `make bench`: botocore hooks that record every call made through the
events they are registered on (one client's, or the default session's that clients copy).

Each call is recorded once, before moto answers (``before-parameter-build``: once per API call,
with the caller's parameters), with who made it; its parsed answer is added by ``after-call``
(the request context carries the one to the other). bench/roundtrips.py counts calls per step and
per order with it; bench/cost.py prices the same records (capacity units from the items written
and returned).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Call:
    function: str  # who made it ("" when the counter does not ask)
    service: str  # botocore's service id, hyphenized: "dynamodb", "sqs", "sfn"
    operation: str  # "TransactWriteItems"
    params: Mapping[str, Any]
    response: Mapping[str, Any] | None = None


class Calls:
    """Every call made through the events it is attached to, in order.

    ``caller()`` names who is calling (e.g. the simulator's current invocation); a call it names
    no one for (None) is not counted. ``attach(events, function=...)`` names the caller instead.
    """

    def __init__(self, caller: Callable[[], str | None] | None = None) -> None:
        self.calls: list[Call] = []
        self._caller = caller

    def attach(self, events: Any, *, function: str | None = None) -> Callable[[], None]:
        """Count the calls made through ``events``; returns what detaches the hooks."""

        def before(model: Any, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
            who = function if function is not None else (self._caller() if self._caller else "")
            if who is None:
                return
            call = Call(who, model.service_model.service_id.hyphenize(), model.name, params)
            self.calls.append(call)
            context["bench_call"] = call

        def after(parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
            if "bench_call" in context:
                context["bench_call"].response = parsed

        unique = f"bench-calls-{id(self)}-{function}"
        hooks = (("before-parameter-build", before), ("after-call", after))
        for event, hook in hooks:
            events.register(event, hook, unique_id=f"{unique}-{event}")

        def detach() -> None:
            for event, hook in hooks:
                events.unregister(event, hook, unique_id=f"{unique}-{event}")

        return detach

    @contextmanager
    def attached(self, events: Any) -> Iterator[Calls]:
        detach = self.attach(events)
        try:
            yield self
        finally:
            detach()

    def operations(self, since: int = 0) -> list[str]:
        """The operation names of the calls from index ``since`` on."""
        return [call.operation for call in self.calls[since:]]
