"""The public API: `POST /orders` (HTTP idempotency) and `GET /orders/{order_id}`, on the
library's `reliability.api.RestApi` (the routes of `orders.workflow.ROUTES`, the error shape, the
request helpers a view uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING

# Every request builds the order service; orders.runtime imports it only where it builds it (for
# the kinds of function that never do), so this function imports it here, at init: its cold start.
import orders.service  # noqa: F401
from orders.config import ApiSettings
from orders.contract import CreateOrderRequest, parse_create_order
from orders.handlers import init_done
from orders.runtime import current
from orders.workflow import ROUTES, SERVICE
from reliability.api import RestApi
from reliability.http import HttpResponse

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.event_handler import Response

    from orders.contract import OrderView

SETTINGS = ApiSettings
CREATE_ROUTE = next(route.name for route in ROUTES if route.view.endswith(":create_order"))

API = RestApi(SERVICE, runtime=lambda: current(SETTINGS))
caller = API.caller


def create_order() -> Response[str]:
    def place(request: CreateOrderRequest, stored_key: str, owner: str) -> HttpResponse:
        accepted = current(SETTINGS).order_service.place(
            request, stored_key=stored_key, owner=owner, status_base=API.status_base()
        )
        return HttpResponse(status=202, body=accepted.model_dump(mode="json"))

    return API.idempotent(CREATE_ROUTE, parse=parse_create_order, execute=place, what="the order")


def get_order(order_id: str) -> OrderView:
    return current(SETTINGS).order_service.view(order_id, caller=API.caller())


# The views of this module are defined above: orders.workflow.ROUTES may name them.
handler = API.handler()


init_done()  # the end of init (orders.handlers)
