"""The local cloud's edge for an in-process cloud: its REST API handler, called without sockets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emulator.apigw_template import apis_from_template
from localcloud.apigw import HttpRequest, RestApiHandler
from ops.fuzz.oracle import Answer
from ops.fuzz.requests import Request
from simulator.cloud import InProcessCloud

STAGE = "local"


class EdgeTransport:
    """The local cloud's REST API handler without sockets, invoking through moto's Lambda API."""

    def __init__(self, cloud: InProcessCloud, assembly: Path) -> None:
        template = json.loads((assembly / f"retrysafe-{STAGE}-app.template.json").read_text())
        resources = template["Resources"]
        functions = {
            logical: resource["Properties"]["FunctionName"]
            for logical, resource in resources.items()
            if resource["Type"] == "AWS::Lambda::Function"
        }
        (spec,) = apis_from_template(
            template, physical_ids={k: k for k in resources}, function_names=functions
        )
        lambda_client = cloud.client("lambda")

        def invoke(function: str, event: dict[str, Any]) -> tuple[Any, str | None]:
            response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
            return json.loads(response["Payload"].read()), response.get("FunctionError")

        # No throttle in-process: the requests come faster than any stage's rate (the throttle
        # itself is tested in tests/localcloud/test_apigw.py, and make fuzz meets it over HTTP).
        self.edge = RestApiHandler(
            spec.__class__(**{**spec.__dict__, "throttle": None}),
            invoke=invoke,
            account_id="123456789012",
            region="us-east-1",
        )

    def __call__(self, request: Request) -> Answer:
        path, _, query = request.path.partition("?")
        response = self.edge.handle(
            HttpRequest(
                method=request.method,
                path=path,
                query=query,
                headers=list(request.headers),
                body=request.body,
                host="127.0.0.1:4600",
            )
        )
        return Answer(
            response.status, tuple(response.headers), b"" if request.method == "HEAD" else response.body
        )
