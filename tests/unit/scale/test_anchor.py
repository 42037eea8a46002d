"""The model anchored to the real handlers: the same eight orders (six paid, two declined) run
through the in-process cloud (real handlers on moto, the local stage's templates) and through the
scale model of the same templates end the same way, after the same task invocations.

What this anchors is the path: states, Catch routes, terminal statuses, one application per
consumer. Timing and quotas are not anchored (moto has neither).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scale.model import Faults, Model, Order
from scale.topology import read
from simulator.cloud import running_cloud

STAGE = "local"
ORDERS = 8
DECLINED = {2, 5}


@pytest.fixture
def _offline_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "RETRYSAFE_CRASH_POINTS"):
        monkeypatch.delenv(name, raising=False)


def _real(assembly: Path) -> tuple[dict[int, str], dict[int, list[str]], dict[str, int]]:
    """Per order number: its status, its task invocations; and the messages left in DLQs."""
    statuses: dict[int, str] = {}
    traces: dict[int, list[str]] = {}
    with running_cloud(assembly) as cloud:
        ids = {}
        for n in range(ORDERS):
            body = {
                "customer_id": f"declined-{n}" if n in DECLINED else f"c-{n}",
                "currency": "EUR",
                "items": [{"sku": f"sku-{n % 20 + 1}", "quantity": 1}],
            }
            response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": f"anchor-{n}"})
            assert response.status == 202, response.body
            ids[str(response.body["order_id"])] = n
        cloud.settle()
        prefix = f"retrysafe-{STAGE}-"
        for invocation in cloud.invocations:
            order_id = invocation.event.get("order_id") if isinstance(invocation.event, dict) else None
            if order_id in ids and "token" in invocation.event:  # a workflow task's state
                traces.setdefault(ids[order_id], []).append(invocation.function.removeprefix(prefix))
        for order_id, n in ids.items():
            statuses[n] = cloud.api("GET", f"/orders/{order_id}").body["status"]
        dlq = {out: len(cloud.messages(out)) for out in cloud.outputs if out.endswith("DlqUrl")}
    return statuses, traces, dlq


@pytest.mark.usefixtures("_offline_aws")
def test_the_model_and_the_handlers_take_the_same_path(synthesized: Callable[[str], Path]) -> None:
    assembly = synthesized(STAGE)
    statuses, traces, dlq = _real(assembly)

    model = Model(read(assembly, STAGE), Faults(), seed=1)
    for n in range(ORDERS):
        model.submit(n * 0.1, Order(f"o-{n}", outcome="payment-declined" if n in DECLINED else None))
    model.run(horizon=3600)
    report = model.report()

    assert report["violations"] == 0
    assert sum(dlq.values()) == sum(report["dlq_legit"].values()) == 0
    for n in range(ORDERS):
        assert [statuses[n]] == model.orders[f"o-{n}"].terminal, n
        assert traces[n] == model.trace[f"o-{n}"], n
