"""A few single faults against the local cloud in EXIT mode: the Lambda worker process really dies.

    PYTHONPATH=functions:.:lib/reliability/src:lab/src python -m chaos.local

writes results/chaos/localcloud.{json,md}.

The in-process harness proves the logic under every fault; this proves the crash mechanism is the
real one: `RETRYSAFE_CRASH_MODE=exit` makes the worker process `os._exit(137)` at the point, the
local cloud reports `Runtime.ExitError` to Step Functions, which retries in a fresh worker. Only
points that heal in a few real seconds are here (a step's lease is its timeout, 20 s; an SQS
consumer's redelivery waits out a 180 s visibility timeout, so those stay in-process).

Each fault: switch the crash point on for new workers (a state dir so exactly one hit crashes
across processes), place the happy path's request over HTTP, wait for it to finish (an operator redrive if the
execution gave up before the dead attempt's lease passed), wait for the consumers, then
`ops.invariants` and: the point fired (its marker exists), the history shows Runtime.ExitError.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import boto3

from emulator import project
from ops.api_client import ApiClient
from ops.invariants import Stores, check
from ops.local import control, process
from ops.outcomes import outcomes, request_factory
from ops.redrive import redrive_failed_executions
from ops.roles import events_step, final_step, first_atomic_step, provider_step
from ops.seed import seed_service
from ops.service import proof, service
from reliability.declaration import Service, function_name

T = TypeVar("T")
RESULTS = project.results("chaos")
SERVICE = service()
HAPPY = outcomes(SERVICE)[0]
FINAL_STATUSES = frozenset(s.status for s in SERVICE.steps if s.status)


def crash_points(declared: Service) -> tuple[str, ...]:
    """The faults, each at a role the declaration gives a step (`ops.roles`): the provider's step
    after its effect, the fence never completed; the first atomic step's transaction committed
    and its response lost; one of the events sent; the last step's transaction committed."""
    provider, atomic, events, final = (
        provider_step(declared),
        first_atomic_step(declared),
        events_step(declared),
        final_step(declared),
    )
    points = []
    if provider is not None:
        points.append(f"fence:after-effect:{provider.name}@{function_name(provider.name)}")
    if atomic is not None:
        points.append(f"after:DynamoDB.TransactWriteItems@{function_name(atomic.name)}")
    if events is not None:
        points.append(f"after:SQS.SendMessage@{function_name(events.name)}")
    if final.kind == "atomic" and final is not atomic:
        points.append(f"after:DynamoDB.TransactWriteItems@{function_name(final.name)}")
    return tuple(points)


POINTS = crash_points(SERVICE)
WAIT_SECONDS = 150.0
STEP_LEASE_SECONDS = 21.0


@dataclass
class LocalResult:
    point: str
    fired: bool = False
    exit_errors: int = 0
    redrives: int = 0
    status: str = ""
    provider_effects: int = 0  # the provider's applied effects for the entity (the proof's hook)
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)


def _wait(probe: Callable[[], T | None], timeout: float = WAIT_SECONDS) -> T | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value is not None:
            return value
        time.sleep(0.5)
    return None


def run(assembly: Path, points: tuple[str, ...] = POINTS) -> list[LocalResult]:
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="chaos-local-") as tmp,
        process.background(state_dir=Path(tmp) / "cloud", assembly=assembly, extra_args=["--prewarm"]) as out,
    ):
        session = boto3.session.Session(
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 - the local cloud's fake credentials
            region_name=out.region,
        )

        def client(name: str) -> Any:
            return session.client(name, endpoint_url=out.endpoint)

        seed_service(client("dynamodb"), out.outputs)
        api = ApiClient(str(out.api_url))
        stores = Stores.from_outputs(out.outputs, client)
        for n, point in enumerate(points):
            state = Path(tmp) / f"state-{n}"
            results.append(_one(point, n=n, state_dir=state, out=out, api=api, client=client, stores=stores))
            print(f"  {point}: {results[-1].status}, {results[-1].violations}", file=sys.stderr, flush=True)
        control.set_crash_points(out.endpoint, None)
    return results


def _one(
    point: str,
    *,
    n: int,
    state_dir: Path,
    out: Any,
    api: ApiClient,
    client: Callable[[str], Any],
    stores: Stores,
) -> LocalResult:
    started = time.monotonic()
    result = LocalResult(point)
    state_dir.mkdir(parents=True)
    control.set_crash_points(out.endpoint, f"{point}=1", state_dir=str(state_dir), mode="exit")
    created = api.create(request_factory(SERVICE)(HAPPY.name, n), key=f"local-{uuid.uuid4().hex[:12]}")
    if created.status != 202:
        result.violations.append(f"the starting POST answered {created.status}: {created.text}")
        return result
    entity_id = created.json[SERVICE.entity.id_field]

    def final() -> str | None:
        status = str(api.read(entity_id).json["status"])
        return status if status in FINAL_STATUSES else None

    sfn = client("stepfunctions")
    status = _wait(final, timeout=60)
    while status is None and result.redrives < 3:
        # The state machine gave up while the dead attempt's lease was live: an operator redrive.
        time.sleep(STEP_LEASE_SECONDS)
        result.redrives += len(
            redrive_failed_executions(sfn, state_machine_arn=out.outputs["StateMachineArn"])
        )
        status = _wait(final, timeout=60)
    result.status = status or "UNFINISHED"
    view = api.read(entity_id).json
    hook = getattr(proof(SERVICE), "provider_effects", None)
    result.provider_effects = hook(view)[1] if hook else 0
    for execution in sfn.list_executions(stateMachineArn=out.outputs["StateMachineArn"])["executions"]:
        if execution["name"].startswith(entity_id):
            history = sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)
            result.exit_errors += json.dumps(history["events"], default=str).count("Runtime.ExitError") and 1
    result.fired = any(state_dir.iterdir())
    report = check(stores, allow_in_flight=False)
    deadline = time.monotonic() + 60
    while not report.ok and time.monotonic() < deadline:
        time.sleep(1.0)
        report = check(stores)
    result.violations.extend(report.violations)
    if result.status != HAPPY.status:
        result.violations.append(f"{SERVICE.entity.name} ended {result.status}")
    if not result.fired:
        result.violations.append("the crash point never fired")
    if not result.exit_errors:
        result.violations.append("no Runtime.ExitError in the execution history")
    result.seconds = round(time.monotonic() - started, 1)
    return result


def write(results: list[LocalResult], directory: Path = RESULTS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "command": "PYTHONPATH=functions:.:lib/reliability/src:lab/src python -m chaos.local",
        "mode": "exit (the worker process dies: os._exit(137))",
        "faults": len(results),
        "violations": sum(len(r.violations) for r in results),
        "results": [asdict(r) for r in results],
    }
    (directory / "localcloud.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Single faults on the local cloud (exit mode: a real worker death)",
        "",
        f"`{data['command']}`: {data['faults']} faults, {data['violations']} invariant violations.",
        "",
        "| crash point | fired | Runtime.ExitError | operator redrives | status | provider effects "
        "| seconds | violations |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{r.point}` | {r.fired} | {bool(r.exit_errors)} | {r.redrives} | {r.status} "
        f"| {r.provider_effects} | {r.seconds} | {len(r.violations)} |"
        for r in results
    ]
    (directory / "localcloud.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    from emulator.synth import synthesize  # noqa: PLC0415

    results = run(synthesize("local"))
    write(results)
    return 0 if all(not r.violations for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
