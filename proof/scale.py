"""How the sample's orders end, for the scale model (`scale/scenarios.py`): the share of orders
its business rules send down each catch route (`ops.outcomes`), in the order the model draws
them; the rest complete (declined by the provider 5 %, out of stock 2 %); and its hot key."""

from __future__ import annotations

OUTCOME_SHARES: tuple[tuple[str, float], ...] = (("payment-declined", 0.05), ("out-of-stock", 0.02))
# The tables whose consumer adds every event to one item per day (the analytics consumer's daily
# total): a hot key, one partition's write units (infra/capacity.py's own limit).
HOT_KEY_TABLES = frozenset({"aggregates"})
