"""The events the simulator hands to handlers, in the shapes AWS sends them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localcloud import pollers

REGION = "us-east-1"
ACCOUNT = "123456789012"
EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"


def sqs_record(message: dict[str, Any], *, queue_arn: str) -> dict[str, Any]:
    """An SQS -> Lambda record from a ReceiveMessage message (the local cloud's pollers' shape)."""
    return pollers.sqs_record(message, queue_arn=queue_arn, region=REGION)


def rest_event(
    method: str, path: str, *, body: Any = None, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """An API Gateway REST proxy event (the shape of events/api/*.json)."""
    template = json.loads((EVENTS_DIR / "api" / "get_order.json").read_text())
    resource = "/orders/{order_id}" if path.count("/") >= 2 else "/orders"
    path_parameters = {"order_id": path.rsplit("/", 1)[-1]} if resource != "/orders" else None
    text = body if isinstance(body, str) or body is None else json.dumps(body)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    template.update(
        {
            "resource": resource,
            "path": path,
            "httpMethod": method,
            "headers": all_headers,
            "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
            "pathParameters": path_parameters,
            "body": text,
            "isBase64Encoded": False,
        }
    )
    template["requestContext"] = {
        **template["requestContext"],
        "resourcePath": resource,
        "httpMethod": method,
        "path": f"/{template['requestContext']['stage']}{path}",
        "requestId": str(uuid.uuid4()),
    }
    return template
