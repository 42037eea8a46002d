"""A service's API module written with the library's public API only (`reliability.api`): a POST
that books a visit under HTTP idempotency and a GET of it, routed from the declaration."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.event_handler import Response

from reliability.api import RestApi
from reliability.declaration import Entity, Route, Service, Step
from reliability.errors import MalformedBody, RequestError
from reliability.http import HttpIdempotency, HttpResponse

ROUTES = (
    Route(
        method="POST",
        path="/visits",
        operation_id="bookVisit",
        view="visit_api:book_visit",
        status=202,
        description="Book a visit",
        response="VisitBooked",
        request="BookVisit",
        idempotent=True,
    ),
    Route(
        method="GET",
        path="/visits/{visit_id}",
        operation_id="getVisit",
        view="visit_api:get_visit",
        status=200,
        description="A visit",
        response="Visit",
    ),
)
SERVICE = Service(
    name="visits",
    entity=Entity(name="visit", id_prefix="v-", table="visits"),
    tables=frozenset({"visits", "fences", "idempotency"}),
    queue="visits",
    steps=(Step(name="HoldSeats", kind="atomic", effect="visit_api:hold", description="Hold", next=None),),
    routes=ROUTES,
)


class TooManySeats(RequestError):
    status = 422
    code = "TooManySeats"


class VisitNotFound(RequestError):
    status = 404
    code = "VisitNotFound"


@dataclass(frozen=True)
class BookVisit:
    seats: int

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        return {"seats": self.seats}


def parse_book_visit(body: str | bytes | None) -> BookVisit:
    try:
        data = json.loads(body or "")
    except ValueError as error:
        raise MalformedBody("the body is not valid JSON") from error
    seats = data.get("seats") if isinstance(data, dict) else None
    if type(seats) is not int or seats < 1:
        raise MalformedBody("seats: a whole number above 0")
    if seats > 4:
        raise TooManySeats(f"at most 4 seats, not {seats}")
    return BookVisit(seats=seats)


@dataclass
class Runtime:
    """The composition root the test hands in: one HttpIdempotency factory, the visits booked."""

    idempotency: Any = None
    booked: list[tuple[int, str]] = field(default_factory=list)

    def http_idempotency(self) -> HttpIdempotency:
        assert self.idempotency is not None
        built: HttpIdempotency = self.idempotency()
        return built


RUNTIME = Runtime()
API = RestApi(SERVICE, runtime=lambda: RUNTIME)


def book_visit() -> Response[str]:
    def book(request: BookVisit, stored_key: str, caller: str) -> HttpResponse:
        RUNTIME.booked.append((request.seats, caller))
        visit_id = f"v-{len(RUNTIME.booked)}"
        return HttpResponse(
            status=202,
            body={
                "visit_id": visit_id,
                "status_url": f"{API.status_base()}/visits/{visit_id}",
                "key": stored_key,
            },
        )

    return API.idempotent(ROUTES[0].name, parse=parse_book_visit, execute=book, what="the visit")


@dataclass(frozen=True)
class Visit:
    visit_id: str
    seats: int

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        return {"visit_id": self.visit_id, "seats": self.seats}


def get_visit(visit_id: str) -> Visit:
    number = int(visit_id.removeprefix("v-")) if visit_id.removeprefix("v-").isdigit() else 0
    if not 0 < number <= len(RUNTIME.booked):
        raise VisitNotFound(f"no visit {visit_id!r}")
    return Visit(visit_id=visit_id, seats=RUNTIME.booked[number - 1][0])


handler = API.handler()
