"""How the sample's orders end, for the scale model (`scale/scenarios.py`): the share of orders
its business rules send down each catch route (`ops.outcomes`), in the order the model draws
them; the rest complete. Declined by the provider 5 %, out of stock 2 %."""

from __future__ import annotations

OUTCOME_SHARES: tuple[tuple[str, float], ...] = (("payment-declined", 0.05), ("out-of-stock", 0.02))
