"""The sample's kinds of function: the library's settings (`reliability.settings`: one model per
kind, validated once at cold start, the tables and queues of a step or consumer from its entry),
bound to the sample's declaration (`orders.workflow.SERVICE`). The API's tables are the sample's
own choice: every table a step record may be on (orders.items.record_tables) is read by
`GET /orders/{id}`, and the provider's record by the same view."""

from __future__ import annotations

from orders.workflow import SERVICE
from reliability import settings as kinds
from reliability.settings import FunctionSettings as FunctionSettings  # noqa: PLC0414 - re-export
from reliability.settings import InvalidSettings as InvalidSettings  # noqa: PLC0414 - re-export
from reliability.settings import MissingSetting as MissingSetting  # noqa: PLC0414 - re-export
from reliability.settings import QueueFedSettings as QueueFedSettings  # noqa: PLC0414 - re-export
from reliability.settings import settings_of as settings_of  # noqa: PLC0414 - re-export


class ApiSettings(FunctionSettings):
    """The API: HTTP idempotency, orders, and the reads behind `GET /orders/{id}`."""

    DECLARATION = SERVICE
    TABLES = ("idempotency", "orders", "inventory", "payments", "ledger", "fences")
    QUEUES = (SERVICE.queue,)


class WorkerSettings(kinds.WorkerSettings):
    DECLARATION = SERVICE


class ConsumerSettings(kinds.ConsumerSettings):
    DECLARATION = SERVICE


class StepSettings(kinds.StepSettings):
    DECLARATION = SERVICE


class SweepSettings(kinds.SweepSettings):
    DECLARATION = SERVICE
