"""A conditional write's own token: the SDK's resend of a write that landed is the caller's own.

botocore sends a call again after a timeout or a 5xx. When the first attempt had landed and only
its answer was lost, the resend meets the item that very call wrote and fails its condition, and
the caller would take its own write for another's (a 409, a refusal, a conflict). So the write
carries a token made once per call (every SDK attempt of the call sends the same request), in
the item's ``attempt`` attribute, and the caller recognises it in one of two ways:

- ``with_attempt(condition)``: the condition also passes where the item holds the token, so the
  resend writes again what it wrote (the HTTP lock: Powertools reads the refusal itself, and the
  lock's record is written only by the request that holds it);
- ``CallToken.wrote(old)``: the refused write's ALL_OLD item holds the token, so the call's write
  landed, and nothing is written twice (an item that others write too, such as an order).

A DeleteItem leaves no item to carry a token: its caller reads an absent item as the delete done.
Transactions need none of this: botocore gives each TransactWriteItems a ClientRequestToken.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

ATTEMPT_ATTRIBUTE = "attempt"


def with_attempt(condition: str) -> str:
    """A write's condition, or the item is the one this very call wrote."""
    return f"({condition}) OR #attempt = :attempt"


@dataclass(frozen=True)
class CallToken:
    """One call's token, and the placeholders that write and test it (``#attempt``, ``:attempt``)."""

    value: str = field(default_factory=lambda: uuid.uuid4().hex)
    SET: ClassVar[str] = "#attempt = :attempt"  # the UpdateExpression's SET clause that writes it

    @property
    def item_value(self) -> dict[str, str]:
        return {"S": self.value}

    @property
    def names(self) -> dict[str, str]:
        return {"#attempt": ATTEMPT_ATTRIBUTE}

    @property
    def values(self) -> dict[str, dict[str, str]]:
        return {":attempt": self.item_value}

    def wrote(self, old: Mapping[str, Any] | None) -> bool:
        """Whether a refused write's ALL_OLD item is this call's own landed write."""
        return old is not None and old.get(ATTEMPT_ATTRIBUTE) == self.item_value


__all__ = ["ATTEMPT_ATTRIBUTE", "CallToken", "with_attempt"]
