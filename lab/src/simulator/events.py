"""The events the simulator hands to handlers, in the shapes AWS sends them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from emulator import project, shapes
from emulator.apigw_template import Route, find_route
from emulator.config import ACCOUNT_ID as ACCOUNT
from emulator.config import REGION
from emulator.shapes import rest_proxy_event

EVENTS_DIR = project.root() / "events"  # the project's sample events (`make invoke`)

# The simulated API's identity in every REST event: what a `make invoke` sample event carries.
API_STAGE = "local"
API_ID = "abc123"
RESOURCE_ID = "r1"  # a request no declared route takes
API_DOMAIN = f"{API_ID}.execute-api.{REGION}.amazonaws.com"
SOURCE_IP = "203.0.113.10"  # TEST-NET-3 (RFC 5737)
USER_AGENT = "curl/8.5.0"


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
    edge sends), on the simulated API (`API_STAGE`, `API_ID`, `API_DOMAIN`); `caller`:
    the IAM principal that signed it (None: an unsigned request, as on the local stage). The
    resource and path parameters are those of the route among `routes` (the template's,
    `InProcessCloud.api_routes`) that the request takes, as API Gateway picks it; with none that
    matches, the path itself is the resource."""
    found = find_route(routes, method, [part for part in path.split("/") if part])
    resource, resource_id, path_parameters = (
        (found[0].resource_path, found[0].resource_id, found[1]) if found else (path, RESOURCE_ID, {})
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
        stage=API_STAGE,
        api_id=API_ID,
        account_id=ACCOUNT,
        request_id=str(uuid.uuid4()),
        host=API_DOMAIN,
        source_ip=SOURCE_IP,
        user_agent=USER_AGENT,
        user_arn=caller,
    )
