"""Cold start as users pay it: each handler's cold invocation (its import plus its first
invocation, AWS clients included) against a bare Powertools handler making the same AWS calls.

Lambda's cold start imports the handler module in a fresh interpreter, from the code asset as
infra/asset.py builds it: with bytecode when the building Python is the functions' runtime's,
else without, and then the function's own code is compiled at import while the libraries (the
Powertools layer, boto3 in the runtime) come precompiled; the functions then build their clients
on their first invocation (orders.runtime), which is part of what the first caller waits for. This
measures the same: the asset (``infra.asset.stage``: ``functions/`` and the library, bytecode as
that decides) is staged into a temporary task root, and each cold invocation runs in a fresh
``python`` with ``PYTHONDONTWRITEBYTECODE=1`` (bench/coldprobe.py).

The AWS calls stay in the process: bench/coldcalls.py first records each function's first
invocation of the sample events on the in-process cloud (moto, untimed, in this process), with
moto's raw HTTP answers; the probe replays those answers from a botocore ``before-send`` hook, so
botocore serializes, signs and parses each call as on AWS and only the send is skipped. Not moto
in the probe: its import loads botocore and boto3 before the clock starts, which would hide the
very modules a cold start pays for; no thread either (an in-process HTTP server's CPU would count
in the process's time).

The floor (``FLOOR_SOURCE``) is a Powertools handler with Logger + Metrics + Tracer that builds
the same clients (orders.runtime's ``CLIENT_CONFIG``, one botocore session) on its first
invocation and makes the same calls with the same parameters, against the same replay, compiled
the same way. Tracing: as in the functions, POWERTOOLS_TRACE_DISABLED is unset, and Powertools
turns the Tracer off outside Lambda (no LAMBDA_TASK_ROOT), which it does for both sides alike.

Times are CPU time (``process_time``). One pair = the floor then the handler, each in its own
interpreter; a function's ratio is the median over ``PAIRS`` pairs of handler time / floor time
(pairs, so a busy machine slows both sides of a ratio alike). The import alone (the figure this
script gave before, against the same floor's import, which is Logger + Metrics + Tracer only) is
the last column, from the same runs. Usage: ``PYTHONPATH=functions:. python bench/coldstart.py
[--pairs N]`` (``make bench``); prints a Markdown table and writes ``bench/results/coldstart.md``
and ``.json``. ``--against REV`` is the A/B a change is judged by (the ratios move by ~0.1 between
runs on a shared machine, so two runs cannot compare it): the asset of ``REV`` (a git revision, or a
directory holding another copy of ``functions/`` and ``lib/``) is measured beside this tree's, each
round the floor, then ``REV``, then this tree (or ``--tree REV``; ``--bytecode``: with the bytecode a
build on the runtime's Python ships), interleaved; it prints the table and writes nothing.
The ratios are timings and vary with the machine; which modules each handler imports is behaviour,
pinned by tests/unit/orders/test_handler_imports.py.
"""

from __future__ import annotations

import argparse
import io
import json
import marshal
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.coldcalls import CONFIGS, FirstInvocation, outcome, record
from bench.record import command, written_by
from infra import asset
from ops.roles import first_atomic_step, provider_step
from ops.service import service
from reliability.cdk.declared import pascal

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "coldprobe.py"
RESULTS = Path(__file__).resolve().parent / "results"
# Pairs per function: on this shared machine a ratio moves by ~0.1 between runs, so the median is
# taken over more pairs than the 5 it once was.
PAIRS = 9
STAGE = "local"  # the stage the sample events are written for (events/README.md)
# The lead's bar: a function's cold invocation at most this many times its floor's. A figure of
# `make bench`, not a test: on a shared machine the ratio moves by more than the margin.
LIMIT = 1.25
FLOOR = "bare_powertools_handler"
# The first invocations measured (bench/coldcalls.py records them), by output prefix: one per
# handler module, and both kinds of step (the first atomic one, the provider's leased one: the
# declaration's, `ops.roles`) and the first consumer.
_SERVICE = service()
FUNCTIONS_MEASURED = (
    "Api",
    "Worker",
    *(s.name for s in (first_atomic_step(_SERVICE), provider_step(_SERVICE)) if s is not None),
    *(pascal(c.name) for c in _SERVICE.consumers[:1]),
    "SweepAccepted",
)
FLOOR_SOURCE = '''"""The floor: a Powertools handler with Logger, Metrics and Tracer that builds its
clients on its first invocation (one botocore session, the functions' configurations) and makes
the AWS calls its event lists; nothing else."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
CONFIGS = {configs!r}
_session = None
_clients = {{}}


def _client(service, config):
    global _session
    if (service, config) not in _clients:
        import botocore.session
        from botocore.config import Config

        if _session is None:
            _session = botocore.session.get_session()
        _clients[service, config] = _session.create_client(service, config=Config(**CONFIGS[config]))
    return _clients[service, config]


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event, context):
    from botocore.exceptions import ClientError

    for service, config, method, params in event["calls"]:
        try:
            getattr(_client(service, config), method)(**params)
        except ClientError:
            pass  # the recorded answer was an error the function handles
    return {{"calls": len(event["calls"])}}
'''
# What every function's environment adds to its template's: no bytecode written (each run compiles
# the asset again), offline credentials, and a proxy nobody listens on, so a request the replay
# does not answer fails at once instead of leaving the machine.
ENVIRONMENT = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "coldstart",
    "AWS_SECRET_ACCESS_KEY": "coldstart",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
}
_INHERITED_NOT = ("POWERTOOLS_", "PYTHON", "AWS_", "RETRYSAFE_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


@dataclass(frozen=True)
class Row:
    function: str  # output prefix (`HoldSeat`)
    module: str
    aws_calls: int
    floor_ms: float
    handler_ms: float
    ratio: float
    floor_import_ms: float
    import_ms: float
    import_ratio: float


@dataclass(frozen=True)
class Run:
    import_seconds: float
    cold_seconds: float


def floor_source() -> str:
    """FLOOR_SOURCE with orders.runtime's client configurations, read from the objects themselves."""
    from orders import runtime  # noqa: PLC0415 - read here, in the untimed parent

    # botocore keeps the options a Config was built with (merged ones included) only here.
    configs = {name: dict(getattr(runtime, name)._user_provided_options) for name in CONFIGS}
    return FLOOR_SOURCE.format(configs=configs)


def task_root(directory: Path, tree: Path | None = None) -> Path:
    """The asset as Lambda unpacks it (infra.asset: functions/ and the library, no bytecode), of
    this tree or of `tree`, plus the floor and the probe."""
    root = asset.stage(directory / "task", tree)
    (root / f"{FLOOR}.py").write_text(floor_source())
    shutil.copy(PROBE, root / PROBE.name)
    return root


def tree_of(revision: str, directory: Path) -> Path:
    """A checkout holding the asset's sources at `revision`: a directory as given, else the git
    revision's `functions/` and library extracted into `directory`."""
    if Path(revision).is_dir():
        return Path(revision)
    sources = [str(p.relative_to(ROOT)) for p in (asset.FUNCTIONS_DIR, asset.LIBRARY_DIR)]
    archive = subprocess.run(  # noqa: S603 - git, with a revision the caller names
        ["git", "archive", "--format=tar", revision, *sources],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return directory


def probe(root: Path, case: Path, invocation: FirstInvocation, module: str) -> Run:
    """One cold invocation of `module` (the handler or the floor) in a fresh interpreter, checked:
    every recorded answer used, and the handler's result the recorded one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_NOT)}
    env.update(invocation.environment, **ENVIRONMENT, PYTHONPATH=str(root))
    out = subprocess.run(  # noqa: S603 - this interpreter, our own probe and module names
        [sys.executable, PROBE.name, str(case), module],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{module} ({invocation.function_name}) failed:\n{out.stderr[-3000:]}")
    line: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if line["unused_answers"]:
        raise RuntimeError(f"{module} made fewer calls than recorded: {line['unused_answers']} left")
    if module == invocation.module and outcome(line["result"]) != outcome(invocation.result):
        raise RuntimeError(f"{module} answered {line['result']!r}, recorded {invocation.result!r}")
    return Run(line["import_seconds"], line["cold_seconds"])


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def measure(
    recorded: dict[str, FirstInvocation], pairs: int = PAIRS, functions: tuple[str, ...] = FUNCTIONS_MEASURED
) -> list[Row]:
    """The rows of `functions`, from their first invocations (`bench.coldcalls.record`)."""
    with tempfile.TemporaryDirectory(prefix="retrysafe-coldstart-") as tmp:
        root = task_root(Path(tmp))
        rows = []
        for function in functions:
            invocation = recorded[function]
            case = root / f"{function}.case"
            case.write_bytes(marshal.dumps(invocation.to_marshal()))
            # Once each, not counted: warms the OS file cache and checks the replay before timing.
            probe(root, case, invocation, FLOOR)
            probe(root, case, invocation, invocation.module)
            samples = [
                (probe(root, case, invocation, FLOOR), probe(root, case, invocation, invocation.module))
                for _ in range(pairs)
            ]
            rows.append(
                Row(
                    function=function,
                    module=invocation.module,
                    aws_calls=len(invocation.calls),
                    floor_ms=_median_ms([f.cold_seconds for f, _ in samples]),
                    handler_ms=_median_ms([h.cold_seconds for _, h in samples]),
                    ratio=round(statistics.median(h.cold_seconds / f.cold_seconds for f, h in samples), 2),
                    floor_import_ms=_median_ms([f.import_seconds for f, _ in samples]),
                    import_ms=_median_ms([h.import_seconds for _, h in samples]),
                    import_ratio=round(
                        statistics.median(h.import_seconds / f.import_seconds for f, h in samples), 2
                    ),
                )
            )
        return rows


def compare(
    recorded: dict[str, FirstInvocation],
    revision: str,
    rounds: int,
    functions: tuple[str, ...],
    against: str | None = None,
    *,
    bytecode: bool = False,
) -> str:
    """The A/B table: each function's cold invocation at `revision` and in this tree (or at
    `against`) against the floor, interleaved round by round; ratios are medians over rounds.
    `bytecode`: the B side's asset carries bytecode for this Python, as `infra.asset.stage` builds
    it on a machine whose Python is the functions' runtime's."""
    with tempfile.TemporaryDirectory(prefix="retrysafe-coldstart-ab-") as tmp:
        after_tree = tree_of(against, Path(tmp) / "after-tree") if against else None
        after = task_root(Path(tmp) / "after", after_tree)
        if bytecode:
            asset.compile_bytecode(after)
        before = task_root(Path(tmp) / "before", tree_of(revision, Path(tmp) / "before-tree"))
        lines = [
            f"| function | floor (ms) | {revision} (ms) | ratio | {against or 'this tree'} (ms) | ratio |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for function in functions:
            invocation = recorded[function]
            cases = {}
            for root in (before, after):
                cases[root] = root / f"{function}.case"
                cases[root].write_bytes(marshal.dumps(invocation.to_marshal()))
                probe(root, cases[root], invocation, invocation.module)  # warm-up, uncounted
            probe(after, cases[after], invocation, FLOOR)
            runs = [
                (
                    probe(after, cases[after], invocation, FLOOR).cold_seconds,
                    probe(before, cases[before], invocation, invocation.module).cold_seconds,
                    probe(after, cases[after], invocation, invocation.module).cold_seconds,
                )
                for _ in range(rounds)
            ]
            ratio_before = statistics.median(b / f for f, b, _ in runs)
            ratio_after = statistics.median(a / f for f, _, a in runs)
            lines.append(
                f"| {function} | {_median_ms([f for f, _, _ in runs])} "
                f"| {_median_ms([b for _, b, _ in runs])} | {ratio_before:.2f}x "
                f"| {_median_ms([a for _, _, a in runs])} | {ratio_after:.2f}x |"
            )
            sys.stdout.write(lines[-1] + "\n")
        return "\n".join(lines) + "\n"


def render(rows: list[Row]) -> str:
    lines = [
        "| function | handler module | AWS calls | floor (ms) | cold invocation (ms) "
        f"| ratio (median of pairs) | within {LIMIT}x | import only: floor / handler (ms), ratio |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    lines += [
        f"| {r.function} | `{r.module}` | {r.aws_calls} | {r.floor_ms} | {r.handler_ms} | {r.ratio:.2f}x "
        f"| {'yes' if r.ratio <= LIMIT else 'no'} "
        f"| {r.floor_import_ms} / {r.import_ms}, {r.import_ratio:.2f}x |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cold invocation (import + first invocation) of each handler vs a bare Powertools one."
    )
    parser.add_argument("--pairs", type=int, default=PAIRS, help=f"pairs per function (default {PAIRS})")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="A/B: also measure the asset of REV (a git revision or a checkout), interleaved; writes nothing",
    )
    parser.add_argument("--tree", metavar="REV", help="(A/B only) the B side: REV instead of this tree")
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="(A/B only) the B side's asset with bytecode for this Python (a build on the runtime's Python)",
    )
    parser.add_argument(
        "--functions", nargs="+", choices=FUNCTIONS_MEASURED, default=FUNCTIONS_MEASURED, help="(A/B only)"
    )
    options = parser.parse_args(argv)
    pairs = options.pairs
    from emulator.synth import synthesize  # noqa: PLC0415 - the app's assembly, built once and cached

    recorded = record(synthesize(STAGE))
    if options.against:
        functions = tuple(options.functions)
        table = compare(recorded, options.against, pairs, functions, options.tree, bytecode=options.bytecode)
        sys.stdout.write("\n" + table)
        return 0
    rows = measure(recorded, pairs)
    table = render(rows)
    compiled = (
        "the asset's bytecode, built by this Python, the runtime's"
        if sys.version_info[:2] == asset.RUNTIME_PYTHON
        else "function code compiled at import: the asset ships no bytecode when built by a Python "
        f"other than the runtime's, {'.'.join(map(str, asset.RUNTIME_PYTHON))}"
    )
    header = (
        "# Cold start: each handler's cold invocation vs a bare Powertools handler\n\n"
        f"CPU time of importing each handler module in a fresh interpreter ({compiled}) and running "
        "its first invocation of a sample event, AWS clients included, "
        "the AWS answers replayed in-process from a recording on moto; the floor is a handler with "
        "only Logger + Metrics + Tracer that builds the same clients and makes the same calls "
        f"against the same replay. Median of {pairs} pairs in one run (`make bench`, "
        "bench/coldstart.py; how and why in its docstring). Timings: they vary with the machine "
        f"and its load (load average {os.getloadavg()[0]:.1f} when this run ended).\n\n"
        + written_by("bench/coldstart.py", argv)
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "coldstart.md").write_text(header + table)
    document = {"command": command("bench/coldstart.py", argv), "rows": [asdict(r) for r in rows]}
    (RESULTS / "coldstart.json").write_text(json.dumps(document, indent=2) + "\n")
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
