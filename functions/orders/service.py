"""The API's use cases (`POST /orders`, `GET /orders/{id}`), as plain Python over the ports.

The worker's and the operators' use cases on an order's runs are in orders.runs: neither needs
the API's contract or the saga's step table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from orders import items
from orders.contract import Charge, CreateOrderRequest, OrderAccepted, OrderView, ProviderCall
from orders.domain import Order, OrderMessage, OrderStatus, new_order, order_id_for
from orders.errors import OrderConflict, OrderNotFound, UnknownSku
from orders.workflow import SERVICE, STEPS
from reliability.keys import execution_token

if TYPE_CHECKING:  # the ports are Protocols: annotations only, no module to load at run time
    from collections.abc import Callable
    from datetime import datetime

    from orders.ports import Catalog, OrderStore, PaymentProvider, Queue
    from reliability.runs import FenceStore


@dataclass
class OrderService:
    """`POST /orders` and `GET /orders/{id}`."""

    catalog: Catalog
    orders: OrderStore
    payments: PaymentProvider
    queue: Queue
    clock: Callable[[], datetime]
    stage: str
    # The saga's step fences (each step's status on the order's current run), built when a view
    # first reads them: placing an order never does, so POST's cold start loads no fence code.
    fences: Callable[[], FenceStore]
    # A table's physical name by its short name (where a step's record is carried, orders.items).
    table_name: Callable[[str], str] = str

    def place(
        self, request: CreateOrderRequest, *, stored_key: str, owner: str, status_base: str = ""
    ) -> OrderAccepted:
        """Price, store (idempotently, keyed by the stored idempotency key) and enqueue an order.

        The order write and the queue send are two writes; a crash between them, or after the send
        and before the client saw the answer, heals on the client's retry with the same key and
        body: the order id is derived from the key (which names the caller, `owner`), so the write
        finds the stored order (the same items: prices are not compared, the catalog may have
        changed meanwhile), and while that order is still ACCEPTED its message is sent again (a
        duplicate is harmless: the worker dedupes per order and run). An order past ACCEPTED was
        picked up: nothing is re-sent. A retry whose sku has since left the catalog is still that
        order: pricing refuses it, so the order the key names is read before the refusal is
        answered (a read only on that path). An order a client never retries stays ACCEPTED until
        the `sweep-accepted` function (`Reruns.resend_stranded`) sends its message again.
        """
        try:
            catalog = self.catalog.lookup([item.sku for item in request.items])
            order = self.orders.create(
                new_order(
                    request=request,
                    catalog=catalog,
                    stored_idempotency_key=stored_key,
                    owner=owner,
                    now=self.clock(),
                )
            )
        except UnknownSku as refused:
            order = self._placed(order_id_for(stored_key), request, refused=refused)
        if order.status is OrderStatus.ACCEPTED:
            self.queue.send(OrderMessage(order.order_id, order.run, order.idempotency_key).as_dict())
        return OrderAccepted(order_id=order.order_id, status_url=f"{status_base}/orders/{order.order_id}")

    def _placed(self, order_id: str, request: CreateOrderRequest, *, refused: UnknownSku) -> Order:
        """The order a refused request's key already placed; the refusal when there is none (a
        new order with an unknown sku)."""
        order = self.orders.get(order_id)
        if order is None:
            raise refused
        if not order.is_for(request):
            raise OrderConflict(f"order {order_id} was placed with this key and a different body")
        return order

    def view(self, order_id: str, *, caller: str) -> OrderView:
        """Three reads: the order, its current run's step records (one batch, wherever
        `orders.items.record_at` says each is), the provider's record of the order (one query).
        Another caller's order does not exist for this one: 404, as for an unknown id, so an id
        cannot be probed (an order stored before owners were recorded has none: 404 to all)."""
        from reliability.effects import RecordOn  # noqa: PLC0415 - a view's only: POST's cold start
        from reliability.record import StepId  # noqa: PLC0415

        order = self.orders.get(order_id)
        if order is None or order.owner != caller:
            raise OrderNotFound(order_id)
        token = execution_token(stage=self.stage, business_id=order_id, run=order.run)
        steps = [StepId(token=token, step=entry.name) for entry in STEPS]
        carried = {
            step: RecordOn(self.table_name(carrier.table), carrier.key(order_id, token))
            for step in steps
            if (carrier := items.carrier_of(step.step)) is not None
        }
        records = self.fences().read_many(steps, record_on=carried)
        charges, calls = self.payments.history(order_id)
        return OrderView(
            order_id=order.order_id,
            status=order.status,
            customer_id=order.customer_id,
            currency=order.currency,
            total_cents=order.total_cents,
            items=order.items,
            steps=SERVICE.step_statuses({step.step: record.state for step, record in records.items()}),
            charges=[Charge(**asdict(charge)) for charge in charges],
            provider_calls=[ProviderCall(**asdict(call)) for call in calls],
            execution_arn=order.execution_arn,
        )
