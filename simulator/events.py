"""The events the simulator hands to handlers, in the shapes AWS sends them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from emulator import shapes
from emulator.apigw_template import Route, find_route
from emulator.config import ACCOUNT_ID as ACCOUNT
from emulator.config import REGION
from emulator.shapes import rest_proxy_event

EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"


def sqs_record(message: dict[str, Any], *, queue_arn: str) -> dict[str, Any]:
    """An SQS -> Lambda record from a ReceiveMessage message (the local cloud's pollers' shape)."""
    return shapes.sqs_record(message, queue_arn=queue_arn, region=REGION)


def rest_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    caller: str | None = None,
    routes: Sequence[Route] = (),
) -> dict[str, Any]:
    """An API Gateway REST proxy event (`emulator.shapes.rest_proxy_event`, what the local cloud's
    edge sends), on the sample events' API (events/api/*.json: stage, API id, domain); `caller`:
    the IAM principal that signed it (None: an unsigned request, as on the local stage). The
    resource and path parameters are those of the route among `routes` (the template's,
    `InProcessCloud.api_routes`) that the request takes, as API Gateway picks it; with none that
    matches, the path itself is the resource."""
    sample = json.loads((EVENTS_DIR / "api" / "get_order.json").read_text())["requestContext"]
    found = find_route(routes, method, [part for part in path.split("/") if part])
    resource, resource_id, path_parameters = (
        (found[0].resource_path, found[0].resource_id, found[1])
        if found
        else (path, sample["resourceId"], {})
    )
    text = body if isinstance(body, str) or body is None else json.dumps(body)
    return rest_proxy_event(
        method=method,
        path=path,
        resource_path=resource,
        resource_id=resource_id,
        headers=list({"Content-Type": "application/json", **(headers or {})}.items()),
        query={},
        path_parameters=path_parameters,
        body=text,
        is_base64=False,
        stage=sample["stage"],
        api_id=sample["apiId"],
        account_id=ACCOUNT,
        request_id=str(uuid.uuid4()),
        host=sample["domainName"],
        source_ip=sample["identity"]["sourceIp"],
        user_agent=sample["identity"].get("userAgent"),
        user_arn=caller,
    )
