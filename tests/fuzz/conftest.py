"""The fuzz suites' cloud: one in-process cloud (moto, the local stage deployed, the catalog seeded)
for the package, and its REST API as the local cloud's edge serves it (the deployed template's
routes, models and gateway responses): called without sockets by the hostile requests, over HTTP
by schemathesis. One cloud for both: starting one is most of a suite's time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcloud.apigw_server import RestApiServer
from simulator.cloud import InProcessCloud, running_cloud
from tests.fuzz.edge import EdgeTransport


@pytest.fixture(scope="package")
def cloud(local_assembly: Path) -> Iterator[InProcessCloud]:
    with running_cloud(local_assembly) as running:
        yield running


@pytest.fixture(scope="package")
def edge(cloud: InProcessCloud, local_assembly: Path) -> EdgeTransport:
    return EdgeTransport(cloud, local_assembly)


@pytest.fixture(scope="package")
def api_url(edge: EdgeTransport) -> Iterator[str]:
    """The stage's base URL of the edge served over HTTP on a free 127.0.0.1 port."""
    server = RestApiServer(edge.edge, port=0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
