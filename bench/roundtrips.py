"""Round trips to AWS per fenced step, counted with a botocore event hook in one run against moto.

The same step (write one ledger entry, return its id) is run five ways, first run and replay:

- atomic fence (``FenceStore.run_atomic``): effect + record in one TransactWriteItems;
- leased fence, external effect (``run_leased`` returning a dict): claim + complete;
- leased fence, DynamoDB effect (``run_leased`` returning an AtomicEffect): claim + one transaction;
- Powertools ``idempotent_function`` around the step: in-progress put, effect, completion update;
- a naive get-then-put (not race-safe; shown for the cost only).

The external effect's own call (e.g. the payment provider) is not an AWS call and is not counted.

Usage: ``PYTHONPATH=functions python bench/roundtrips.py`` (``make bench``). Prints a Markdown table
and writes ``bench/results/roundtrips.md`` and ``.json``. Counts are behaviour, not timing: they
are the same on every machine, and tests/unit/reliability/test_roundtrips.py pins them.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from moto import mock_aws

from reliability.fence import AtomicEffect, FenceStore, StepId
from reliability.telemetry import Telemetry

REGION = "us-east-1"
FENCES = "bench-fences"
IDEMPOTENCY = "bench-idempotency"
LEDGER = "bench-ledger"
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Row:
    approach: str
    first_run: int
    replay: int
    first_calls: list[str]
    replay_calls: list[str]
    race_safe: str


class Counter:
    """Counts every API call a client makes: a ``before-call`` hook (fires before moto answers)."""

    def __init__(self, client: Any) -> None:
        self.calls: list[str] = []
        client.meta.events.register("before-call", self._on_call, unique_id="bench-roundtrip-counter")

    def _on_call(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    @contextmanager
    def measure(self) -> Iterator[list[str]]:
        self.calls = []
        seen: list[str] = []
        yield seen
        seen.extend(self.calls)


class _Context:
    """Just enough of a Lambda context for Powertools' in-progress expiry."""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _create_tables(ddb: Any) -> None:
    for name in (FENCES, IDEMPOTENCY):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    ddb.create_table(
        TableName=LEDGER,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _ledger_entry(order_id: str) -> dict[str, Any]:
    return {
        "TableName": LEDGER,
        "Item": {"pk": {"S": f"ORDER#{order_id}"}, "sk": {"S": "LEDGER#charge"}, "amount": {"N": "1000"}},
    }


def _twice(counter: Counter, run: Callable[[], Any]) -> tuple[list[str], list[str]]:
    with counter.measure() as first:
        run()
    with counter.measure() as replay:
        run()
    return first, replay


def measure() -> list[Row]:
    """Run every approach once and twice against a fresh moto backend; return the counts."""
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "bench")
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        _create_tables(ddb)
        counter = Counter(ddb)
        telemetry = Telemetry(
            logger=Logger(service="bench", level="WARNING"),
            metrics=Metrics(namespace="bench", service="bench"),
        )
        fences = FenceStore(
            client=ddb, table_name=FENCES, ttl_seconds=3600, telemetry=telemetry, namespace="bench"
        )
        rows: list[Row] = []

        def add(approach: str, race_safe: str, run: Callable[[], Any]) -> None:
            first, replay = _twice(counter, run)
            rows.append(Row(approach, len(first), len(replay), first, replay, race_safe))

        def atomic() -> Any:
            return fences.run_atomic(
                StepId("bench.o-1.r1", "record-ledger"),
                lambda: AtomicEffect({"entry": "o-1"}, [{"Put": _ledger_entry("o-1")}]),
            )

        add("atomic fence (`run_atomic`)", "yes", atomic)

        def leased_external() -> Any:
            return fences.run_leased(
                StepId("bench.o-2.r1", "charge-payment"),
                attempt_id="req-1",
                lease_seconds=30,
                effect=lambda key: {"charge": key[-12:]},
            )

        add("leased fence, external effect (`run_leased` -> dict)", "yes (+ fencing token)", leased_external)

        def leased_atomic() -> Any:
            return fences.run_leased(
                StepId("bench.o-3.r1", "record-ledger"),
                attempt_id="req-1",
                lease_seconds=30,
                effect=lambda _key: AtomicEffect({"entry": "o-3"}, [{"Put": _ledger_entry("o-3")}]),
            )

        add(
            "leased fence, DynamoDB effect (`run_leased` -> AtomicEffect)",
            "yes (+ fencing token)",
            leased_atomic,
        )

        config = IdempotencyConfig(
            event_key_jmespath="order_id", lambda_context=cast(LambdaContext, _Context())
        )
        persistence = DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=ddb)

        @idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
        def powertools_step(order: dict[str, Any]) -> dict[str, Any]:
            ddb.put_item(**_ledger_entry(order["order_id"]))
            return {"entry": order["order_id"]}

        add(
            "Powertools `idempotent_function`",
            "lock only: no fencing token, a zombie's effect still lands",
            lambda: powertools_step(order={"order_id": "o-4"}),
        )

        def naive() -> dict[str, Any]:
            key = {"id": {"S": "naive#o-5"}}
            stored = ddb.get_item(TableName=IDEMPOTENCY, Key=key, ConsistentRead=True).get("Item")
            if stored:
                return dict(json.loads(stored["result"]["S"]))
            ddb.put_item(**_ledger_entry("o-5"))
            result = {"entry": "o-5"}
            ddb.put_item(TableName=IDEMPOTENCY, Item={**key, "result": {"S": json.dumps(result)}})
            return result

        add("naive get-then-put", "no (two racers both apply)", naive)
        return rows


def render(rows: list[Row]) -> str:
    lines = [
        "| approach | first run | replay | first-run calls | replay calls | race-safe |",
        "| --- | ---: | ---: | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row.approach} | {row.first_run} | {row.replay} | {', '.join(row.first_calls)} | "
            f"{', '.join(row.replay_calls)} | {row.race_safe} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    with redirect_stdout(io.StringIO()):  # the layer's EMF metrics and logs are not the point here
        rows = measure()
    table = render(rows)
    header = (
        "# Round trips per fenced step\n\n"
        "AWS API calls per step, counted with a botocore `before-call` hook against moto "
        "(`make bench`, bench/roundtrips.py). The step writes one ledger entry.\n\n"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "roundtrips.md").write_text(header + table)
    (RESULTS / "roundtrips.json").write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
