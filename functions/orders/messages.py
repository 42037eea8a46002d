"""The orders-queue message as it arrives (docs/how-it-works.md, "Messages and consumer dedup"):
the library's run message of an order (`reliability.workflow_runs.RunMessages`: the order id, the
run, the key lineage, no other field, checked by hand: the worker loads no pydantic). Anything
else is poison. The consumers' event is orders.events: each function builds only the model it
parses.
"""

from __future__ import annotations

from orders.workflow import SERVICE
from reliability.workflow_runs import RunMessages

ORDER_MESSAGES = RunMessages(SERVICE.entity)
