"""The sample's composition root: the library's (`reliability.runtime.Runtime`: clients once per
cold start, fences, consumer dedup, HTTP idempotency, dead letters, the worker's starter and the
sweep's reruns) plus the sample's own ports, each built on first use from the function's settings
(orders.config): the orders store, the catalog, the payment provider, the ledger, the consumers'
tables, the order service, the saga's context and the event consumer.

Handlers ask `current(<their settings class>)` for the runtime; nothing is built at import time.
Tests build a `Runtime` themselves (moto-backed clients, a controllable clock, a crash plan) and
`install()` or `scoped()` it.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from orders import workflow as declared
from orders.adapters.dynamo import DynamoAggregates, DynamoCatalog, DynamoLedger, DynamoNotifications
from orders.adapters.order_store import DynamoOrderStore
from orders.adapters.payments import FakePaymentProvider
from orders.config import ConsumerSettings, FunctionSettings
from reliability import runtime as library
from reliability.runtime import CLIENT_CONFIG as CLIENT_CONFIG  # noqa: PLC0414 - re-export
from reliability.runtime import WAITING_CLIENT_CONFIG as WAITING_CLIENT_CONFIG  # noqa: PLC0414 - re-export
from reliability.runtime import Runtimes, S_co
from reliability.runtime import default_client_factory as default_client_factory  # noqa: PLC0414 - re-export

if TYPE_CHECKING:
    from orders.consumers import EventConsumer
    from orders.domain import Order
    from orders.saga import SagaContext
    from orders.service import OrderService

# Cold start: a function imports only what it uses (bench/coldstart.py). The saga (steps and the
# API's fences only), the use cases and the consumer are imported by the method that builds them,
# so a kind of function that never builds one never loads it. What a kind builds on every
# invocation its handler module imports itself, at init (its cold start);
# tests/unit/orders/test_handler_imports.py pins both.

K = TypeVar("K", bound=FunctionSettings)


class Runtime(library.Runtime[S_co]):
    """The library's runtime with the sample's ports, lazily built and cached."""

    SERVICE = declared.SERVICE

    # --- the run model's hooks ------------------------------------------------------------------
    @property
    def run_store(self) -> DynamoOrderStore:
        return self.orders

    def workflow_input(self, entity: Order, run: int, token: str) -> dict[str, Any]:
        from orders.runs import workflow_input  # noqa: PLC0415 - cold start, see the imports

        return workflow_input(entity, run, token)

    # --- adapters -----------------------------------------------------------------------------
    @cached_property
    def orders(self) -> DynamoOrderStore:
        return DynamoOrderStore(client=self.dynamodb, table_name=self.settings.table("orders"))

    @cached_property
    def catalog(self) -> DynamoCatalog:
        return DynamoCatalog(client=self.dynamodb, table_name=self.settings.table("inventory"))

    @cached_property
    def payments(self) -> FakePaymentProvider:
        return FakePaymentProvider(
            client=self.dynamodb,
            table_name=self.settings.table("payments"),
            key_lifetime_seconds=self.settings.provider_key_lifetime_seconds,
            clock=self.clock,
        )

    @cached_property
    def ledger(self) -> DynamoLedger:
        return DynamoLedger(table_name=self.settings.table("ledger"))

    @cached_property
    def notifications(self) -> DynamoNotifications:
        return DynamoNotifications(table_name=self.settings.table("notifications"))

    @cached_property
    def aggregates(self) -> DynamoAggregates:
        return DynamoAggregates(table_name=self.settings.table("aggregates"))

    # --- use cases ----------------------------------------------------------------------------
    @cached_property
    def order_service(self) -> OrderService:
        from orders.service import OrderService  # noqa: PLC0415 - cold start, see the imports
        from reliability.keys import SAGA_NAMESPACE  # noqa: PLC0415 - cold start, see the imports

        return OrderService(
            catalog=self.catalog,
            orders=self.orders,
            payments=self.payments,
            queue=self.queue(declared.SERVICE.queue),
            clock=self.now,
            stage=self.settings.stage,
            fences=lambda: self.fences(SAGA_NAMESPACE),
            table_name=self.table_name,
        )

    @cached_property
    def event_consumer(self) -> EventConsumer:
        """This function's consumer (`CONSUMER_NAME`), its effect resolved from orders.workflow."""
        from orders.consumers import EventConsumer, effect_of  # noqa: PLC0415 - cold start

        name = self.kind(ConsumerSettings).consumer_name
        return EventConsumer(
            name=name, effect=effect_of(name), ports=self, orders=self.orders, dedup=self.consumer_dedup(name)
        )

    @cached_property
    def saga(self) -> SagaContext:
        """Only the ports this function is configured with (infra/stacks/app.py grants one set per step)."""
        from orders.saga import SagaContext  # noqa: PLC0415 - cold start, see the imports

        s = self.settings
        return SagaContext(
            stage=s.stage,
            orders=self.orders if "orders" in s.tables else None,
            clock=self.now,
            inventory=self.catalog if "inventory" in s.tables else None,
            payments=self.payments if "payments" in s.tables else None,
            ledger=self.ledger if "ledger" in s.tables else None,
            # A function granted any consumer's queue publishes to all of them (or fails here).
            event_queues=(
                [self.queue(c.name) for c in declared.CONSUMERS]
                if any(c.name in s.queues for c in declared.CONSUMERS)
                else []
            ),
            event_dedup_seconds=s.dedup_ttl_seconds,
            tables=dict(s.tables),
        )


RUNTIMES: Runtimes[Runtime[FunctionSettings]] = Runtimes(Runtime)
install = RUNTIMES.install
scoped = RUNTIMES.scoped


def current(kind: type[K]) -> Runtime[K]:
    """The runtime for this invocation (`reliability.runtime.Runtimes.current`) as the sample's."""
    return cast("Runtime[K]", RUNTIMES.current(kind))
