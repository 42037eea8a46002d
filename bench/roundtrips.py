"""Round trips to AWS per fenced step, counted by `bench.calls` (botocore hooks) in one run against moto.

Two measurements. **Whole steps and whole orders** (`measure_order`): the synthesized app deployed
into moto by the simulator, one order placed and driven to rest through the real handlers (api,
worker, the saga's step functions, the consumers), then every invocation repeated with the same
event (a replay, as a retry or a redrive delivers it); each function's clients count every call
with its operation and the tables or queues it touches. A declined order does the same for the
compensation path. **The primitive alone** (`measure`): the same step (write one business item,
return its id) run five ways, first run and replay:

- atomic fence (``FenceStore.run_atomic``): effect + record in one TransactWriteItems;
- leased fence, external effect (``run_leased`` returning a dict): claim + complete;
- leased fence, DynamoDB effect (``run_leased`` returning an AtomicEffect): claim + one transaction;
- Powertools ``idempotent_function`` around the step: in-progress put, effect, completion update;
- a naive get-then-put (not race-safe; shown for the cost only).

The external effect's own call (e.g. the payment provider) is not an AWS call and is not counted.

Usage: ``PYTHONPATH=functions:. python -m bench.roundtrips`` (``make bench``). Prints Markdown
tables and writes ``bench/results/roundtrips.md`` and ``.json``. Counts are behaviour, not timing:
they are the same on every machine; tests/unit/bench/test_roundtrips.py pins the primitive,
tests/integration/test_step_roundtrips.py the whole steps and orders.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass, field
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

from bench.calls import Call, Calls
from bench.record import command, written_by
from ops.outcomes import Outcome, entity_route, id_field, outcomes, request_factory, starting_route
from ops.roles import provider_step
from ops.service import service
from reliability import AtomicEffect, FenceStore, StepId
from reliability.declaration import Service
from reliability.telemetry import Telemetry

REGION = "us-east-1"
FENCES = "bench-fences"
IDEMPOTENCY = "bench-idempotency"
EFFECTS = "bench-effects"  # the business items the primitive's step writes
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Row:
    approach: str
    first_run: int
    replay: int
    first_calls: list[str]
    replay_calls: list[str]
    race_safe: str


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
        TableName=EFFECTS,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _effect_item(entity_id: str) -> dict[str, Any]:
    return {
        "TableName": EFFECTS,
        "Item": {"pk": {"S": f"ENTITY#{entity_id}"}, "sk": {"S": "EFFECT#1"}, "amount": {"N": "1000"}},
    }


def _twice(calls: Calls, run: Callable[[], Any]) -> tuple[list[str], list[str]]:
    mark = len(calls.calls)
    run()
    replay = len(calls.calls)
    run()
    return calls.operations(mark)[: replay - mark], calls.operations(replay)


def measure() -> list[Row]:
    """Run every approach once and twice against a fresh moto backend; return the counts."""
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "bench")
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        _create_tables(ddb)
        calls = Calls()
        calls.attach(ddb.meta.events)
        telemetry = Telemetry(
            logger=Logger(service="bench", level="WARNING"),
            metrics=Metrics(namespace="bench", service="bench"),
        )
        fences = FenceStore(
            client=ddb, table_name=FENCES, ttl_seconds=3600, telemetry=telemetry, namespace="bench"
        )
        rows: list[Row] = []

        def add(approach: str, race_safe: str, run: Callable[[], Any]) -> None:
            first, replay = _twice(calls, run)
            rows.append(Row(approach, len(first), len(replay), first, replay, race_safe))

        def atomic() -> Any:
            return fences.run_atomic(
                StepId("bench.o-1.r1", "atomic-step"),
                lambda: AtomicEffect({"entry": "o-1"}, [{"Put": _effect_item("o-1")}]),
            )

        add("atomic fence (`run_atomic`)", "yes", atomic)

        def leased_external() -> Any:
            return fences.run_leased(
                StepId("bench.o-2.r1", "external-step"),
                attempt_id="req-1",
                lease_seconds=30,
                effect=lambda key: {"receipt": key[-12:]},
            )

        add("leased fence, external effect (`run_leased` -> dict)", "yes (+ fencing token)", leased_external)

        def leased_atomic() -> Any:
            return fences.run_leased(
                StepId("bench.o-3.r1", "atomic-step"),
                attempt_id="req-1",
                lease_seconds=30,
                effect=lambda _key: AtomicEffect({"entry": "o-3"}, [{"Put": _effect_item("o-3")}]),
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
            ddb.put_item(**_effect_item(order["order_id"]))
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
            ddb.put_item(**_effect_item("o-5"))
            result = {"entry": "o-5"}
            ddb.put_item(TableName=IDEMPOTENCY, Item={**key, "result": {"S": json.dumps(result)}})
            return result

        add("naive get-then-put", "no (two racers both apply)", naive)
        return rows


# --- whole steps and whole orders, through the real handlers --------------------------------

# The tables of the reliability records (step fences; HTTP idempotency and consumer dedup), by
# their logical names (the `<Name>TableName` outputs)
LAYER_TABLES = frozenset({"Fence", "Idempotency"})


def order_outcomes(declared: Service) -> tuple[Outcome, Outcome]:
    """The two runs measured: the happy path, and a compensation: the catch outcome of the
    provider's step (`ops.roles`; the sample's `payment-declined`), else the first catch outcome."""
    found = outcomes(declared)
    provider = provider_step(declared)
    caught = [o for o in found if not o.happy]
    if not caught:
        raise ValueError(f"service {declared.name!r}: no catch outcome to measure a compensation on")
    return found[0], next((o for o in caught if provider and o.failing_step == provider.name), caught[0])


@dataclass(frozen=True)
class Invocation:
    """One function invocation and the AWS calls it made, each `Operation Target[+Target]`."""

    function: str
    calls: list[str]

    @property
    def layer_calls(self) -> list[str]:
        """Calls that touch a reliability record (alone or in a transaction with the effect)."""
        return [call for call in self.calls if LAYER_TABLES & set(call.split(" ", 1)[-1].split("+"))]

    @property
    def other_calls(self) -> list[str]:
        """Calls that touch no reliability record: a leased step's effect, business reads/writes."""
        return [call for call in self.calls if call not in self.layer_calls]


@dataclass
class OrderRun:
    """One order driven to rest (`first`), its `GET`, and every invocation again (`replays`)."""

    scenario: str
    first: list[Invocation] = field(default_factory=list)
    view: list[str] = field(default_factory=list)
    replays: list[Invocation] = field(default_factory=list)

    def total(self, invocations: list[Invocation]) -> int:
        return sum(len(i.calls) for i in invocations)

    def of(self, function: str) -> tuple[Invocation, Invocation]:
        """(first run, replay) of a function that ran once for this order."""
        (first,) = [i for i in self.first if i.function == function]
        (replay,) = [i for i in self.replays if i.function == function]
        return first, replay


def _described(call: Call, names: dict[str, str]) -> str:
    """`Operation Target[+Target]`, each target by its logical name (`names`: physical -> logical)."""
    params = call.params
    found = [params.get("TableName"), params.get("QueueUrl"), *params.get("RequestItems", {})]
    for entry in params.get("TransactItems", []):
        found += [body.get("TableName") for body in entry.values()]
    if "stateMachineArn" in params or "executionArn" in params:
        found.append("StateMachine")
    targets = dict.fromkeys(names.get(str(t), str(t)) for t in found if t)
    return f"{call.operation} {'+'.join(targets)}".strip()


def measure_order(assembly: Path) -> list[OrderRun]:
    """A run of the happy path and of a compensation through the simulator (`order_outcomes`); see
    the module docstring."""
    from simulator.cloud import running_cloud  # noqa: PLC0415 - moto and the simulator only here

    declared = service()
    request = request_factory(declared)
    starting, reading = starting_route(declared), entity_route(declared)
    runs = []
    with running_cloud(assembly) as cloud:
        outputs = cloud.outputs
        names = {v: k.removesuffix("TableName") for k, v in outputs.items() if k.endswith("TableName")}
        names |= {v: k.removesuffix("Url") for k, v in outputs.items() if k.endswith("Url")}
        short = {v: k.removesuffix("FunctionName") for k, v in outputs.items() if k.endswith("FunctionName")}
        recorder = Calls()
        for physical in cloud.functions:
            runtime = cloud.runtime_for(physical)
            for client in ("dynamodb", "sqs", "stepfunctions"):
                recorder.attach(getattr(runtime, client).meta.events, function=short[physical])

        def since(mark: int) -> list[str]:
            return [_described(call, names) for call in recorder.calls[mark:]]

        for outcome in order_outcomes(declared):
            scenario, body = outcome.name, request(outcome.name, 0)
            run = OrderRun(scenario)
            invoked, mark = len(cloud.invocations), len(recorder.calls)
            placed = cloud.api(
                "POST", starting.path, body=body, headers={"Idempotency-Key": f"bench-{scenario}"}
            )
            cloud.settle()
            done = cloud.invocations[invoked:]  # every invocation since is this order's
            # Each invocation's calls are its function's: in one order's first run every function is
            # invoked once, and Step Functions runs a step on its own thread, so the worker's last
            # write can come after the first step's calls (they interleave; grouping keeps them apart).
            calls = recorder.calls[mark:]
            invoked_functions = [short[invocation.function] for invocation in done]
            if len(set(invoked_functions)) != len(invoked_functions):
                raise RuntimeError(
                    f"a function was invoked twice in one order's first run: {invoked_functions}"
                )
            for name in invoked_functions:
                run.first.append(
                    Invocation(name, [_described(call, names) for call in calls if call.function == name])
                )
            strays = [call for call in calls if call.function not in invoked_functions]
            if strays:
                raise RuntimeError(f"calls not attributed to an invocation: {strays}")
            view_mark = len(recorder.calls)
            if reading is not None:
                entity_id = str(placed.body[id_field(declared)])
                cloud.api("GET", reading.path.replace("{" + id_field(declared) + "}", entity_id))
            run.view = since(view_mark)
            for invocation in done:
                mark = len(recorder.calls)
                try:
                    cloud.call(invocation.function, json.loads(json.dumps(invocation.event)))
                except Exception as error:  # a replayed business error is the answer
                    if invocation.error_type != type(error).__name__:
                        raise
                run.replays.append(Invocation(short[invocation.function], since(mark)))
            runs.append(run)
    return runs


def render_orders(runs: list[OrderRun]) -> str:
    lines = [
        "| order | function | first run: layer + other | replay | first-run calls | replay calls |",
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for run in runs:
        for first, replay in zip(run.first, run.replays, strict=True):
            lines.append(
                f"| {run.scenario} | {first.function} | {len(first.layer_calls)} + "
                f"{len(first.other_calls)} | {len(replay.calls)} | {', '.join(first.calls)} | "
                f"{', '.join(replay.calls)} |"
            )
        lines.append(
            f"| {run.scenario} | **whole order** | {run.total(run.first)} | {run.total(run.replays)} | | |"
        )
        lines.append(
            f"| {run.scenario} | `GET /orders/{{id}}` | {len(run.view)} | | {', '.join(run.view)} | |"
        )
    return "\n".join(lines) + "\n"


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
    from emulator.synth import synthesize  # noqa: PLC0415 - the app's assembly, built once and cached

    assembly = synthesize("local")
    with redirect_stdout(io.StringIO()):  # the layer's EMF metrics and logs are not the point here
        rows = measure()
        runs = measure_order(assembly)
    steps, table = render_orders(runs), render(rows)
    text = (
        "# Round trips per step and per order\n\n"
        "AWS API calls made by each function's clients, counted with a botocore hook against moto "
        "(`make bench`, bench/roundtrips.py). Whole steps and orders: one order through the real "
        "handlers (the simulator), then every invocation again with the same event. Layer calls "
        "touch a reliability record (`Fence`: step fences; `Idempotency`: HTTP idempotency and "
        "consumer dedup); the other calls are a leased step's effect or business reads and writes.\n\n"
        + written_by("-m bench.roundtrips", [])
        + f"{steps}\n"
        "The fence primitive alone (the step writes one business item):\n\n"
        f"{table}"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "roundtrips.md").write_text(text)
    data = {
        "command": command("-m bench.roundtrips", []),
        "orders": [asdict(run) for run in runs],
        "primitive": [asdict(r) for r in rows],
    }
    (RESULTS / "roundtrips.json").write_text(json.dumps(data, indent=2) + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
