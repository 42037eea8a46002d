"""A tiny service of its own for the saga runner's and the consumer's tests: a visit holds seats
(atomic, its record carried by the hold item), then pays a fake provider (leased, with
reconcile), and a compensation releases the hold; an audit consumer writes one entry per fact.
Its effects are named by dotted path, as any service's are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reliability import BusinessError, Write
from reliability.declaration import EVENTS, Consumer, Entity, Item, Service, Step
from reliability.effects import AtomicEffect
from reliability.saga import StepRequest, WorkflowRun
from reliability_helpers import ENTRIES, STOCK

MAX_SEATS = 4
HOLDS = "holds"  # the short name of the table the hold items live in


class TooManySeats(BusinessError):
    pass


@dataclass(frozen=True)
class Terms:
    visit_id: str
    seats: int


@dataclass
class FakeProvider:
    """Dedupes on the key; finds an earlier payment by the run's reference."""

    calls: list[str] = field(default_factory=list)
    paid: dict[str, str] = field(default_factory=dict)  # reference -> payment id

    def pay(self, key: str, reference: str) -> dict[str, Any]:
        self.calls.append(key)
        payment = self.paid.setdefault(reference, f"pay-{len(self.paid) + 1}")
        return {"payment_id": payment}

    def find(self, reference: str) -> dict[str, Any] | None:
        payment = self.paid.get(reference)
        return {"payment_id": payment} if payment else None


@dataclass
class Desk:
    """The service's context: its ports and its tables' physical names."""

    provider: FakeProvider = field(default_factory=FakeProvider)
    tables: Mapping[str, str] = field(default_factory=lambda: {HOLDS: STOCK})
    event_dedup_seconds: float | None = 600.0


def run_of(state: Mapping[str, Any]) -> WorkflowRun[Terms]:
    terms = Terms(visit_id=str(state["visit_id"]), seats=int(state["seats"]))
    return WorkflowRun(entity_id=terms.visit_id, token=str(state["token"]), terms=terms)


def _hold_item(terms: Terms, kind: str, token: str) -> Write:
    return Write(
        {
            "Put": {
                "TableName": STOCK,
                "Item": {
                    "pk": {"S": f"visit#{terms.visit_id}"},
                    "sk": {"S": f"{kind}#{token}"},
                    "seats": {"N": str(terms.seats)},
                },
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
    )


def hold(ctx: Desk, terms: Terms, request: StepRequest) -> AtomicEffect:
    if terms.seats > MAX_SEATS:
        raise TooManySeats(f"{terms.seats} seats, at most {MAX_SEATS}")
    token = str(request.state["token"])
    return AtomicEffect(result={"held": terms.seats}, writes=[_hold_item(terms, "hold", token)])


def pay(ctx: Desk, terms: Terms, request: StepRequest, external_key: str) -> dict[str, Any]:
    held = request.result_of("Hold")["held"]
    return {**ctx.provider.pay(external_key, reference=str(request.state["token"])), "seats": held}


def find_payment(ctx: Desk, terms: Terms, request: StepRequest) -> dict[str, Any] | None:
    return ctx.provider.find(str(request.state["token"]))


def announce(ctx: Desk, terms: Terms, request: StepRequest, external_key: str) -> dict[str, Any]:
    return {"announced": external_key}


def release(ctx: Desk, terms: Terms, request: StepRequest) -> AtomicEffect:
    token = str(request.state["token"])
    return AtomicEffect(result={"released": terms.seats}, writes=[_hold_item(terms, "release", token)])


def audit(ports: Any, event: Mapping[str, Any]) -> list[Write]:
    """One audit entry per fact (keyed by the fact's id, the body's `event_id`)."""
    return [
        Write(
            {
                "Put": {
                    "TableName": ENTRIES,
                    "Item": {
                        "pk": {"S": f"visit#{event['visit_id']}"},
                        "sk": {"S": f"audit#{event['event_id']}"},
                        "stage": {"S": str(event["stage"])},
                    },
                }
            }
        )
    ]


_HERE = __name__
SERVICE = Service(
    name="visits",
    entity=Entity(name="visit", id_prefix="v-", table="visits"),
    tables=frozenset({HOLDS, "visits"}),
    queue="visits",
    steps=(
        Step(
            name="Hold",
            kind="atomic",
            effect=f"{_HERE}:hold",
            description="hold the seats",
            ports=(HOLDS,),
            catch={"Release": ("TooManySeats",)},
            record=Item(HOLDS, "hold#"),
            writes=(Item(HOLDS, "hold#"),),
        ),
        Step(
            name="Pay",
            kind="leased",
            effect=f"{_HERE}:pay",
            reconcile=f"{_HERE}:find_payment",
            description="pay the provider",
            ports=("provider",),
            catch={"Release": ("PaymentRefused",)},
            provider="provider",
        ),
        Step(
            name="Announce",
            kind="leased",
            effect=f"{_HERE}:announce",
            description="tell the consumers",
            ports=(EVENTS,),
            provider=EVENTS,
            next=None,
        ),
        Step(
            name="Release",
            kind="atomic",
            effect=f"{_HERE}:release",
            description="undo the hold",
            ports=(HOLDS,),
            compensates="Hold",
            next=None,
            writes=(Item(HOLDS, "release#"),),
        ),
    ),
    consumers=(
        Consumer(
            name="audit",
            effect=f"{_HERE}:audit",
            description="one audit entry per visit paid",
            tables=("audits",),
            writes=(Item("audits", "audit#"),),
        ),
    ),
)
