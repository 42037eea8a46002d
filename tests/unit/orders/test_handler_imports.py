"""Cold start: each handler module imports what its invocations use, and only that.

Each import runs in a fresh interpreter (as Lambda's init does) and reads `sys.modules` after it:
a step function must not load the batch, data-class, parser or idempotency utilities, pydantic
(the API contract and the settings are not pydantic models on its path), nor the use cases it
never calls; the SQS handlers must not load HTTP idempotency, the API resolver or the API's
contract; the worker none of the fence machinery (it dedupes on the execution name); each SQS
handler only the message model it parses, and neither pydantic (their bodies are checked by hand,
orders.fields); the API must not load batch processing nor pydantic (its contract is plain
Python, orders.contract). And what every
invocation of a handler builds (orders.runtime imports it lazily, for the kinds that never build
it) its module imports at init, so the import is the cold start, not a part of it deferred to the
first invocation. Behaviour, not timing (bench/coldstart.py measures the time).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FUNCTIONS = ROOT / "functions"
# The Lambda asset holds both (infra/asset.py): this tree's library, not the one installed.
ASSET_PATH = os.pathsep.join(str(p) for p in (FUNCTIONS, ROOT / "lib" / "reliability" / "src"))
POWERTOOLS = "aws_lambda_powertools."
BATCH = (f"{POWERTOOLS}utilities.batch", f"{POWERTOOLS}utilities.parser", "reliability.batch")
HTTP = (f"{POWERTOOLS}utilities.idempotency", f"{POWERTOOLS}event_handler", "reliability.http")
# Imported for annotations only (under TYPE_CHECKING): the ports are Protocols, LambdaContext a type.
TYPING_ONLY = ("orders.ports", f"{POWERTOOLS}utilities.typing")
# The test seams (crash plans, simulated crashes): loaded only when RETRYSAFE_CRASH_POINTS is set
# (chaos, the local cloud); production calls the hook points of reliability.faults.
CHAOS_ONLY = ("reliability.testing",)
# Powertools' batch utility builds its pydantic parser models when pydantic is imported before it:
# the SQS handlers import it first (they parse with their own models).
PARSER = f"{POWERTOOLS}utilities.parser"
# The functions' clients are plain botocore clients: boto3 would load s3transfer and
# multiprocessing for nothing. Only the API loads it, through Powertools' idempotency persistence.
BOTO3 = ("boto3", "s3transfer")
FENCES = ("reliability.runs", "reliability.store", "reliability.record", "reliability.dedup")
NOT_IMPORTED = {
    "orders.handlers.steps": (
        *TYPING_ONLY,
        *CHAOS_ONLY,
        *BOTO3,
        *BATCH,
        *HTTP,
        f"{POWERTOOLS}utilities.data_classes",
        "orders.service",
        "orders.runs",
        "orders.messages",
        "orders.events",
        "orders.contract",
        "reliability.dedup",
        "pydantic",
    ),
    "orders.handlers.worker": (
        *TYPING_ONLY,
        *CHAOS_ONLY,
        *BOTO3,
        *HTTP,
        PARSER,
        *FENCES,
        "orders.contract",
        "orders.saga",
        "orders.service",
        "orders.consumers",
        "orders.events",
        "pydantic",
    ),
    "orders.handlers.consumers": (
        *TYPING_ONLY,
        *CHAOS_ONLY,
        *BOTO3,
        *HTTP,
        PARSER,
        "orders.contract",
        "orders.service",
        "orders.runs",
        "orders.messages",
        "pydantic",
    ),
    "orders.handlers.api": (
        *TYPING_ONLY,
        *CHAOS_ONLY,
        *BATCH,
        "orders.messages",
        "orders.events",
        "orders.runs",
        "reliability.dedup",
        "pydantic",  # its contract is checked against its JSON Schema (reliability.fields.conform)
        "orders.saga",  # a view reads step statuses from the declaration (Service.step_statuses)
        "reliability.saga",
        *FENCES,  # a view builds its fence reader when it first reads: placing an order never does
    ),
    "orders.handlers.sweep": (
        *TYPING_ONLY,
        *CHAOS_ONLY,
        *BOTO3,
        *BATCH,
        *HTTP,
        *FENCES,
        "pydantic",
        "orders.contract",
        "orders.service",
        "orders.saga",
    ),
}
# What every invocation of the handler builds, imported at init (the runtime builds it lazily).
IMPORTED = {
    "orders.handlers.steps": ("orders.saga", "orders.effects", "reliability.runs"),
    "orders.handlers.worker": ("orders.runs", "reliability.batch"),
    "orders.handlers.consumers": (
        "orders.consumers",
        "orders.effects",
        "reliability.dedup",
        "reliability.runs",
    ),
    "orders.handlers.api": ("orders.service", "reliability.http"),
    "orders.handlers.sweep": ("orders.runs",),
}
PROBE = (
    "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps(sorted(sys.modules)))"
)


def modules_after_import(module: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        env={"PYTHONPATH": ASSET_PATH, "AWS_DEFAULT_REGION": "us-east-1"},
        check=True,
        capture_output=True,
        text=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("handler", sorted(NOT_IMPORTED))
def test_handler_imports_only_what_it_uses(handler: str) -> None:
    loaded = modules_after_import(handler)
    assert handler in loaded
    unused = sorted(m for m in loaded if m.startswith(NOT_IMPORTED[handler]))
    assert unused == [], f"{handler} imports modules it does not use: {unused}"
    deferred = sorted(set(IMPORTED[handler]) - loaded)
    assert deferred == [], f"{handler} leaves what every invocation uses to its first call: {deferred}"


def test_reliability_names_resolve_lazily() -> None:
    """`from reliability import X` still works for every public name, loading only X's module."""
    import reliability  # noqa: PLC0415 - the import under test

    assert sorted(reliability._SOURCES) == sorted(reliability.__all__)
    for name in reliability.__all__:
        source = importlib.import_module(f"reliability.{reliability._SOURCES[name]}")
        assert getattr(reliability, name) is getattr(source, name)
    with pytest.raises(AttributeError):
        getattr(reliability, "not_a_name")  # noqa: B009 - the attribute lookup is what is tested


# The charge step's invocation, in a fresh interpreter: the provider's answer (a charge made, a
# charge found by the reconcile lookup) becomes the step's result through plain data; pydantic and
# the API's contract would be ~90 ms of CPU on the step's cold invocation (bench/coldstart.py).
CHARGE_PROBE = """
import json, sys
from orders.adapters.payments import FakePaymentProvider
from orders.effects import _charge_result

class Client:  # the payments table: every write lands, the lookup finds the charge just made
    def put_item(self, **_):
        return {}

    def query(self, **_):
        item = {"pk": "order#o-1", "sk": "charge#k", "charge_id": "ch_1", "idempotency_key": "k",
                "amount_cents": 500, "currency": "EUR", "status": "SUCCEEDED",
                "created_at": "2026-01-01T00:00:00+00:00", "order_id": "o-1", "reference": "t"}
        return {"Items": [{k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in item.items()}]}

provider = FakePaymentProvider(client=Client(), table_name="payments", key_lifetime_seconds=86400)
made = provider.charge(idempotency_key="k", order_id="o-1", customer_id="c", amount_cents=500,
                       currency="EUR", reference="t")
found = provider.find_charge(order_id="o-1", reference="t")
print(json.dumps({"results": [_charge_result(made), _charge_result(found)], "modules": sorted(sys.modules)}))
"""


def test_a_charge_becomes_the_step_result_without_the_api_contract() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHARGE_PROBE],
        env={"PYTHONPATH": ASSET_PATH, "AWS_DEFAULT_REGION": "us-east-1"},
        check=True,
        capture_output=True,
        text=True,
    )
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    made, found = answer["results"]
    assert made["amount_cents"] == found["amount_cents"] == 500
    assert found == {"charge_id": "ch_1", "amount_cents": 500, "currency": "EUR"}
    loaded = sorted(m for m in answer["modules"] if m.startswith(("pydantic", "orders.contract")))
    assert loaded == [], f"the charge step loads the API's contract: {loaded[:5]}"


# After a handler module's import (a function's init): what init built is frozen out of the
# collector's scans, and the collector runs again (orders.handlers: it is off during init).
GC_PROBE = (
    "import gc, importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))"
)


@pytest.mark.parametrize("handler", sorted(NOT_IMPORTED))
def test_init_ends_with_its_objects_frozen_and_the_collector_on(handler: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", GC_PROBE, handler],
        env={"PYTHONPATH": ASSET_PATH, "AWS_DEFAULT_REGION": "us-east-1"},
        check=True,
        capture_output=True,
        text=True,
    )
    enabled, frozen = json.loads(out.stdout.strip().splitlines()[-1])
    assert enabled
    assert frozen > 10_000, f"{handler}: {frozen} objects frozen at the end of init"
