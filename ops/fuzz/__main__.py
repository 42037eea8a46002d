"""`python -m ops.fuzz` (`make fuzz`): thousands of hostile requests over HTTP against a local cloud.

Uses the running local cloud in `--dir` (left running), else starts one there and stops it. Prints
the figures and writes them to ops/results/fuzz.{json,md}; exit 1 when any answer broke the
contract (a 5xx, an error without the shape, an answer the OpenAPI description does not list or
the contract does not promise, a state change from a rejected request, an accepted order that does
not read back).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from ops.fuzz.oracle import Tally
from ops.fuzz.run import Runner, Stores
from ops.fuzz.transport import HttpTransport
from ops.lifecycle import local_cloud, target_of
from ops.seed import seed_inventory
from ops.target import add_state_dir_option

RESULTS = Path(__file__).resolve().parents[1] / "results"
STAGE = "local"


def _markdown(figures: dict[str, Any]) -> str:
    lines = [
        "# make fuzz: the orders API against hostile requests, over HTTP on the local cloud",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests drawn (default 5000)")
    parser.add_argument("--seed", type=int, default=11, help="hypothesis seed (default 11)")
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
        seed_inventory(dynamodb, out["InventoryTableName"])
        stores = Stores(dynamodb, out["OrdersTableName"], out["IdempotencyTableName"])
        runner = Runner(HttpTransport(out.api_url), stores, stage=STAGE)
        runner.progress = say
        say(f"sending {args.requests} drawn requests to {out.api_url} ...")
        tally: Tally = runner.run(args.requests, seed=args.seed)
    seconds = time.monotonic() - started
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
    return 0 if tally.ok else 1


if __name__ == "__main__":
    sys.exit(main())
