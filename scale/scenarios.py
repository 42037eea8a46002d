"""The load scenarios `make scale` runs on the model: a burst and a soak, on the planned
topology and on the mutant without the capacity settings."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from ops.service import proof, service
from reliability.cdk.capacity import WORKER_SECONDS_PER_MESSAGE
from scale.model import Faults, Model, new_orders
from scale.topology import Topology

# The share of orders the business rules end on each catch route (compensated): the service's
# proof's `OUTCOME_SHARES` (the sample's: declined by the provider 5 %, out of stock 2 %); a
# service without them runs every order down its happy path.
OUTCOME_SHARES: tuple[tuple[str, float], ...] = tuple(getattr(proof(service()), "OUTCOME_SHARES", ()))
# How long after the last order the run may take to settle before what is left counts.
SETTLE_SECONDS = 6 * 3600


@dataclass(frozen=True)
class Scenario:
    name: str
    orders: int
    over_seconds: float
    faults: Faults
    what: str


BURST = Scenario(
    name="burst",
    orders=10_000,
    over_seconds=60,
    faults=Faults(duplicate=0.01),
    what="10,000 orders in one minute; 1 % of messages delivered twice",
)

# The fault search's kinds at rates well above what AWS shows, plus two storms: a drained
# StartExecution bucket for 5 minutes (another tenant of the account, a mass redrive) and a
# provider brownout refusing 20 % of calls for 5 minutes.
SOAK_FAULTS = Faults(
    crash=0.005,
    timeout=0.001,
    transient=0.01,
    duplicate=0.01,
    poison=0.001,
    start_storm=(900.0, 1200.0),
    provider_brownout=(1800.0, 2100.0, 0.2),
)


# The soak's steady rate as a share of what the worker admits: room to catch up after a storm.
SOAK_SHARE = 0.6


def soak_rate(topology: Topology) -> float:
    """SOAK_SHARE of the planned admission (MaximumConcurrency / the worker's time per order)."""
    orders = topology.queues[service().queue]
    return SOAK_SHARE * (orders.max_concurrency or 1) / WORKER_SECONDS_PER_MESSAGE


def soak(rate: float, seconds: float = 3600) -> Scenario:
    return Scenario(
        name="soak",
        orders=int(rate * seconds),
        over_seconds=seconds,
        faults=SOAK_FAULTS,
        what=(
            f"{rate:g} orders/s for {seconds / 60:g} minutes; crashes 0.5 %, timeouts 0.1 %, transient "
            "errors 1 %, duplicates 1 %, poison 0.1 %; StartExecution drained 15-20 min; provider "
            "refusing 20 % at 30-35 min"
        ),
    )


def run(topology: Topology, scenario: Scenario, *, seed: int = 17) -> dict[str, Any]:
    """Run ``scenario`` on ``topology``; the model's report plus what was run."""
    started = time.perf_counter()
    model = Model(topology, scenario.faults, seed)
    rng = random.Random(seed)  # noqa: S311 - reproducible orders, not a secret
    orders = new_orders(scenario.orders, rng=rng, shares=OUTCOME_SHARES)
    spacing = scenario.over_seconds / scenario.orders
    for index, order in enumerate(orders):
        model.submit(index * spacing, order)
    model.run(horizon=scenario.over_seconds + SETTLE_SECONDS)
    return {
        "scenario": scenario.name,
        "what": scenario.what,
        "stage": topology.stage,
        "seed": seed,
        **model.report(),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
