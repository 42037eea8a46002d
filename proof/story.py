"""What the sample's story of one order shows of its payment provider (`ops.story`): the charges
the provider made for the order and the calls it received (the calls' and charges' items are the
provider's own layout, not a declared effect, so only the sample can read them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orders.items import CALL, CHARGE

# (table short name, sort key prefix) -> the items under it in the order's partition
Items = Callable[[str, str], list[dict[str, Any]]]


def story_total(item: Mapping[str, Any]) -> str:
    """The order's total in its story's header (its stored item's `total_cents` and `currency`)."""
    return f"{int(item.get('total_cents', 0)) / 100:.2f} {item.get('currency', '')}".strip()


def story_facts(items: Items) -> dict[str, dict[str, Any]]:
    """Per provider port: what the story keeps (`charges`, `calls`) and its one-line `summary`."""
    charges = items("payments", CHARGE)
    calls = len(items("payments", CALL))
    succeeded = sum(1 for c in charges if c.get("status") == "SUCCEEDED")
    return {
        "payments": {
            "charges": [{"status": c.get("status"), "sk": c["sk"]} for c in charges],
            "calls": calls,
            "summary": f"{succeeded} charge(s) succeeded, {len(charges) - succeeded} declined, "
            f"{calls} provider call(s)",
        }
    }
