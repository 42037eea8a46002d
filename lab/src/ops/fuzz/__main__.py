"""`python -m ops.fuzz` (`make fuzz`): thousands of hostile requests over HTTP against a local cloud,
then schemathesis (every phase) against the published OpenAPI document on the same cloud.

Uses the running local cloud in `--dir` (left running), else starts one there and stops it. Prints
the figures and writes them to results/ops/fuzz.{json,md} and results/ops/schemathesis.{json,md}
(schemathesis's own reports in .cache/schemathesis/); exit 1 when any answer broke the contract
(a 5xx, an error without the shape, an answer the OpenAPI description does not list or the contract
does not promise, a state change from a rejected request, an accepted entity that does not read
back) or schemathesis found a failure (lab/src/ops/fuzz/schemathesis_run.py, schemathesis.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

from emulator import project
from ops.fuzz import schemathesis_run
from ops.fuzz.oracle import Tally
from ops.fuzz.run import Runner, Stores
from ops.fuzz.transport import HttpTransport
from ops.lifecycle import local_cloud, target_of
from ops.seed import seed_service
from ops.target import add_state_dir_option

RESULTS = project.results("ops")
SCHEMATHESIS_REPORTS = schemathesis_run.PROJECT / ".cache" / "schemathesis"
STAGE = "local"


def _markdown(figures: dict[str, Any]) -> str:
    lines = [
        "# make fuzz: the service's API against hostile requests, over HTTP on the local cloud",
        "",
        f"Command: `{figures['command']}` (seed {figures['seed']}), {figures['seconds']:.0f} s wall, "
        f"{figures['machine']}.",
        "",
        "| figure | value |",
        "| --- | --- |",
    ]
    for key, value in figures["tally"].items():
        if key not in ("statuses", "problems"):
            lines.append(f"| {key.replace('_', ' ')} | {value} |")
    lines += ["", "Statuses: " + ", ".join(f"{k}: {v}" for k, v in figures["tally"]["statuses"].items()), ""]
    problems = figures["tally"]["problems"]
    lines += ["Problems:", *(f"- {p}" for p in problems)] if problems else ["Problems: none."]
    return "\n".join(lines) + "\n"


def _schemathesis_markdown(figures: dict[str, Any]) -> str:
    def counts(table: dict[str, Any]) -> str:
        return ", ".join(f"{key}: {value}" for key, value in table.items()) or "none"

    lines = [
        "# make fuzz: schemathesis against the published OpenAPI document, over HTTP on the local cloud",
        "",
        f"Command (from the project directory, so `schemathesis.toml` applies): `{figures['command']}`; "
        f"{figures['seconds']:.0f} s wall, {figures['machine']}.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| requests | {figures.get('requests')} |",
        f"| test cases | {figures.get('test_cases')} |",
        f"| failures | {figures.get('failures')} |",
        f"| errors | {figures.get('errors')} |",
        "",
        "Phases: " + counts(figures.get("phases", {})) + ".",
        "",
        "Statuses: " + counts(figures.get("statuses", {})) + ".",
        "",
        "Failures by kind: " + counts(figures.get("failures_by_kind", {})) + ".",
        "",
        "Failing test cases by check: " + counts(figures.get("failing_test_cases_by_check", {})) + ".",
        "",
        "Warnings: " + counts({k: ", ".join(v) for k, v in figures.get("warnings", {}).items()}) + ".",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests drawn (default 5000)")
    parser.add_argument("--seed", type=int, default=11, help="hypothesis seed (default 11)")
    parser.add_argument(
        "--schemathesis-examples",
        type=int,
        default=500,
        help="schemathesis's test cases per operation and phase (default 500; 0: no schemathesis run)",
    )
    add_state_dir_option(parser)
    args = parser.parse_args(argv)
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", flush=True)

    with local_cloud(args.dir, say) as (out, _started_here):
        if not out.api_url:
            raise SystemExit("the local cloud serves no REST API")
        target = target_of(out)
        dynamodb = target.client("dynamodb")
        seed_service(dynamodb, out.outputs)
        stores = Stores.of(dynamodb, out.outputs)
        runner = Runner(HttpTransport(out.api_url), stores, stage=STAGE)
        runner.progress = say
        say(f"sending {args.requests} drawn requests to {out.api_url} ...")
        tally: Tally = runner.run(args.requests, seed=args.seed)
        seconds = time.monotonic() - started
        checked = None
        if args.schemathesis_examples > 0:
            say(f"schemathesis, every phase, {args.schemathesis_examples} examples per operation ...")
            checked = schemathesis_run.run(
                out.api_url, SCHEMATHESIS_REPORTS, max_examples=args.schemathesis_examples, seed=args.seed
            )
    figures = {
        "command": f"make fuzz (python -m ops.fuzz --requests {args.requests} --seed {args.seed})",
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "tally": tally.as_dict(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fuzz.json").write_text(json.dumps(figures, indent=2) + "\n")
    (RESULTS / "fuzz.md").write_text(_markdown(figures))
    print(_markdown(figures))
    verdict = "OK" if tally.ok else "CONTRACT BROKEN"
    print(f"fuzz: {verdict} ({tally.requests} requests, written to {RESULTS / 'fuzz.md'})")
    if checked is None:
        return 0 if tally.ok else 1
    output = checked.pop("output")
    checked["machine"] = figures["machine"]
    (RESULTS / "schemathesis.json").write_text(json.dumps(checked, indent=2) + "\n")
    (RESULTS / "schemathesis.md").write_text(_schemathesis_markdown(checked))
    if not checked["ok"]:
        print(output)
    print(_schemathesis_markdown(checked))
    verdict = "OK" if checked["ok"] else "DOCUMENT AND API DISAGREE"
    print(
        f"schemathesis: {verdict} (written to {RESULTS / 'schemathesis.md'}, reports {SCHEMATHESIS_REPORTS})"
    )
    return 0 if tally.ok and checked["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
