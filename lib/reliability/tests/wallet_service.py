"""A service of its own for the CDK assembly's tests, written as a team would write one: a wallet
transfer (debit a balance, pay out through a provider, publish, mark done; a refund compensates the
debit), one audit consumer, two routes. `write(root)` lays its declaration, effects, handler
modules and OpenAPI document out under an asset root, as `functions/` holds a service's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PACKAGE = "transfers"
HANDLER_PACKAGE = f"{PACKAGE}.handlers"

DECLARATION = """
from reliability.declaration import EVENTS, Consumer, Entity, Item, Route, Service, Step

SERVICE = Service(
    name="transfers",
    entity=Entity(name="transfer", id_prefix="t-", table="transfers"),
    tables=frozenset({"transfers", "balances", "payouts", "audits"}),
    queue="transfers",
    steps=(
        Step(
            name="Debit",
            kind="atomic",
            effect="transfers.effects:debit",
            description="debit the sender (fenced)",
            ports=("balances",),
            catch={"MarkFailed": ("InsufficientFunds",)},
            record=Item("balances", "debit#"),
            writes=(Item("balances", "debit#"),),
        ),
        Step(
            name="PayOut",
            kind="leased",
            effect="transfers.effects:pay_out",
            reconcile="transfers.effects:find_payout",
            description="pay the receiver through the provider (fenced)",
            ports=("payouts",),
            catch={"Refund": ("PayoutRefused",)},
            provider="payouts",
        ),
        Step(
            name="Publish",
            kind="leased",
            effect="transfers.effects:publish",
            description="fan the event out (fenced)",
            ports=(EVENTS,),
            provider=EVENTS,
        ),
        Step(
            name="MarkDone",
            kind="atomic",
            effect="transfers.effects:mark_done",
            description="mark the transfer DONE (fenced)",
            ports=("transfers",),
            next=None,
            status="DONE",
        ),
        Step(
            name="Refund",
            kind="atomic",
            effect="transfers.effects:refund",
            description="refund the sender (fenced)",
            ports=("balances",),
            compensates="Debit",
            writes=(Item("balances", "refund#"),),
        ),
        Step(
            name="MarkFailed",
            kind="atomic",
            effect="transfers.effects:mark_failed",
            description="mark the transfer FAILED (fenced)",
            ports=("transfers",),
            next=None,
            status="FAILED",
        ),
    ),
    routes=(
        Route(
            method="POST",
            path="/transfers",
            operation_id="createTransfer",
            view="transfers.views:create",
            status=202,
            description="accepted",
            response="TransferAccepted",
            request="CreateTransferRequest",
            idempotent=True,
        ),
        Route(
            method="GET",
            path="/transfers/{transfer_id}",
            operation_id="getTransfer",
            view="transfers.views:get",
            status=200,
            description="the transfer",
            response="TransferView",
        ),
    ),
    consumers=(
        Consumer(
            name="audit",
            effect="transfers.effects:audit",
            description="one audit entry per transfer event",
            tables=("audits",),
            writes=(Item("audits", "audit#"),),
        ),
    ),
)
"""

EFFECTS = ("debit", "pay_out", "find_payout", "publish", "mark_done", "refund", "mark_failed", "audit")
HANDLERS = ("api", "worker", "sweep", "steps", "consumers")

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "transfers", "version": "1"},
    "paths": {
        "/transfers": {
            "post": {
                "operationId": "createTransfer",
                "parameters": [{"in": "header", "name": "Idempotency-Key", "required": True}],
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/CreateTransferRequest"}}
                    }
                },
            }
        },
        "/transfers/{transfer_id}": {
            "get": {
                "operationId": "getTransfer",
                "parameters": [{"in": "path", "name": "transfer_id", "required": True}],
            }
        },
    },
    "components": {
        "schemas": {
            "CreateTransferRequest": {
                "type": "object",
                "properties": {"amount": {"type": "integer", "minimum": 1}},
                "required": ["amount"],
            }
        }
    },
    "x-amazon-apigateway-gateway-responses": {
        "DEFAULT_4XX": {"responseTemplates": {"application/json": '{"error": "BadRequest", "message": "x"}'}},
        "MISSING_AUTHENTICATION_TOKEN": {
            "statusCode": 404,
            "responseTemplates": {"application/json": '{"error": "NotFound", "message": "x"}'},
        },
    },
}

STAGE = {
    "api_auth": "IAM",
    "retain_data": False,
    "customer_managed_keys": False,
    "log_level": "INFO",
    "api_throttle": {"rate": 50, "burst": 100},
    "capacity": {"account_concurrency": 1000, "provider_requests_per_second": 50},
}
CONTEXT: dict[str, Any] = {
    "service": "wallet",
    "stages": {"dev": STAGE, "live": {**STAGE, "customer_managed_keys": True}},
}


def write(root: Path) -> Path:
    """The service's asset root under `root`; returns the declaration module's path."""
    package = root / PACKAGE
    (package / "handlers").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "handlers" / "__init__.py").write_text("")
    for handler in HANDLERS:
        (package / "handlers" / f"{handler}.py").write_text("def handler(event, context):\n    return None\n")
    (package / "effects.py").write_text(
        "".join(f"def {name}(*args):\n    return None\n\n\n" for name in EFFECTS)
    )
    (package / "openapi.json").write_text(json.dumps(OPENAPI))
    declaration = package / "workflow.py"
    declaration.write_text(DECLARATION)
    return declaration
