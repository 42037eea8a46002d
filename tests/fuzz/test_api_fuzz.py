"""The API's fuzz suite in `make test`: a few hundred drawn requests through the local cloud's edge
(the deployed template's routes, models and gateway responses) to the real api function on moto,
judged by ops.fuzz's oracle. `make fuzz` runs thousands over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcloud.apigw import HttpRequest, RestApiHandler
from localcloud.apigw_template import apis_from_template
from ops.fuzz.oracle import Answer
from ops.fuzz.requests import Request
from ops.fuzz.run import Runner, Stores
from simulator.cloud import InProcessCloud, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
STAGE = "local"
REQUESTS = 500
# A fixed seed: the same draws every run, so the coverage assertion below cannot flake (make fuzz
# draws fresh ones).
SEED = 1


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


@pytest.fixture
def runner(local_assembly: Path) -> Iterator[Runner]:
    with running_cloud(local_assembly) as cloud:
        stores = Stores(
            cloud.dynamodb, cloud.outputs["OrdersTableName"], cloud.outputs["IdempotencyTableName"]
        )
        yield Runner(EdgeTransport(cloud, local_assembly), stores, stage=STAGE)


def test_hostile_requests_get_the_contract(runner: Runner):
    tally = runner.run(REQUESTS, seed=SEED)

    figures = tally.as_dict()
    assert tally.ok, json.dumps(figures, indent=2)
    assert tally.requests >= REQUESTS
    assert tally.accepted >= 1, figures  # the mix reaches the happy path too
    assert {400, 404, 405, 415, 422} <= set(tally.statuses), figures
