"""The API's fuzz suite in `make test`: a few hundred drawn requests through the local cloud's edge
(the deployed template's routes, models and gateway responses) to the real api function on moto,
judged by ops.fuzz's oracle. `make fuzz` runs thousands over HTTP."""

from __future__ import annotations

import json

import pytest

from ops.fuzz.run import Runner, Stores
from simulator.cloud import InProcessCloud
from tests.fuzz.edge import STAGE, EdgeTransport

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
REQUESTS = 500
# A fixed seed: the same draws every run, so the coverage assertion below cannot flake (make fuzz
# draws fresh ones).
SEED = 1


@pytest.fixture
def runner(cloud: InProcessCloud, edge: EdgeTransport) -> Runner:
    stores = Stores.of(cloud.dynamodb, cloud.outputs)
    return Runner(edge, stores, stage=STAGE)


def test_hostile_requests_get_the_contract(runner: Runner):
    tally = runner.run(REQUESTS, seed=SEED)

    figures = tally.as_dict()
    assert tally.ok, json.dumps(figures, indent=2)
    assert tally.requests >= REQUESTS
    assert tally.accepted >= 1, figures  # the mix reaches the happy path too
    assert {400, 404, 405, 415, 422} <= set(tally.statuses), figures
