"""`python -m ops.load` (`make load`): entities/s and latency of the local cloud, round after round.

Uses the running local cloud in `--dir` (left running), else starts one there and stops it after.
Seeds the service's reference data, then runs `--rounds` rounds of `--entities` requests (each
creating one entity) from `--clients` clients on the same cloud (so later rounds meet the data of
earlier ones), and reports per round: entities/s (completed), the
POST, GET and end-to-end (POST to a GET that reads it final) latency percentiles, statuses,
connection errors, the local cloud process's CPU seconds per entity (moto, the REST API, the pollers
and Step Functions run in that one Python process, so it serves at most about 1 / that entities/s),
and the load average around it (the machine is shared: read figures with it).
Writes results/ops/load.{json,md}; exit 1 on a connection error or an entity that never got final.
`--orders` is the old name of `--entities` (the recorded commands use it).
Only ever sends to 127.0.0.1.
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

from emulator import project
from ops.lifecycle import local_cloud, target_of
from ops.load.run import Plan, Round
from ops.local import control
from ops.seed import seed_service
from ops.service import service
from ops.target import add_state_dir_option

RESULTS = project.results("ops")
# Later rounds may be at most this much slower than the first (entities/s) on the same cloud.
FLAT_TOLERANCE = 0.20


def _load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _cloud_cpu_seconds(endpoint: str) -> float:
    return float(control.status(endpoint)["cpu_seconds"])


def _ms(figures: dict[str, float], name: str) -> str:
    return f"{figures[name] / 1000:.2f}" if name in figures else "-"


def _markdown(report: dict[str, Any]) -> str:
    name = service().entity.name  # the figures are per entity of the service's
    lines = [
        f"# make load: {name}s/s and latency on the local cloud, round after round on one cloud",
        "",
        f"Command: `{report['command']}` ({report['cloud']}); {report['machine']}; "
        f"niceness {report['niceness']}; {report['seconds']:.0f} s wall.",
        f"Each client keeps at most {report['window']} {name}s in flight and reads each one every "
        f"{report['poll']} s until it is final (end to end is rounded up to that).",
        "",
        f"| round | {name}s | clients | {name}s/s | POST p50/p95/p99 s | GET p50/p95/p99 s | "
        f"{name} end to end p50/p95/p99 s | not accepted / not final | connection errors | "
        f"local cloud CPU s per {name} | load avg (1 min) before / after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rounds"]:
        post, get, end_to_end = r["post_ms"], r["get_ms"], r["end_to_end_ms"]
        lines.append(
            f"| {r['round']} | {r['entities']} | {r['clients']} | {r['entities_per_second']} | "
            f"{_ms(post, 'p50')} / {_ms(post, 'p95')} / {_ms(post, 'p99')} | "
            f"{_ms(get, 'p50')} / {_ms(get, 'p95')} / {_ms(get, 'p99')} | "
            f"{_ms(end_to_end, 'p50')} / {_ms(end_to_end, 'p95')} / {_ms(end_to_end, 'p99')} | "
            f"{r['not_accepted']} / {r['not_final']} | "
            f"{sum(r['connection_errors'].values())} | {r['cloud_cpu_per_entity']:.3f} | "
            f"{r['load_before'][0]} / {r['load_after'][0]} |"
        )
    lines += ["", f"Last round against the first: {report['last_vs_first']:+.0%} {name}s/s.", ""]
    lines += [
        "Local cloud CPU: the CPU time of the local cloud's own process (moto, the REST API, the SQS "
        f"pollers, Step Functions; not the Lambda workers) per {name} of the round. That is one Python "
        f"process, so it serves at most about 1 / that {name}s/s however many cores the machine has.",
        "",
    ]
    lines += [f"Verdict: {report['verdict']}", ""]
    return "\n".join(lines)


def _verdict(rounds: list[dict[str, Any]]) -> tuple[str, float, bool]:
    first, last = rounds[0]["entities_per_second"], rounds[-1]["entities_per_second"]
    change = (last - first) / first if first else 0.0
    problems = []
    if errors := sum(sum(r["connection_errors"].values()) for r in rounds):
        problems.append(f"{errors} connection error(s)")
    if refused := sum(r["not_accepted"] for r in rounds):
        problems.append(f"{refused} request(s) not accepted")
    if stuck := sum(r["not_final"] for r in rounds):
        problems.append(f"{stuck} accepted {service().entity.name}(s) never final")
    if change < -FLAT_TOLERANCE:
        problems.append(f"the last round is {-change:.0%} slower than the first")
    return ("; ".join(problems) or "OK"), change, not problems


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ops.load", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument(
        "--entities",
        "--orders",
        type=int,
        default=1000,
        help="requests per round, one entity each (default 1000)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds on the same cloud (default 5)")
    parser.add_argument("--window", type=int, default=4, help="entities in flight per client (default 4)")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between GETs of an entity")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds a round may take at most")
    parser.add_argument("--stall", type=float, default=120.0, help="seconds without progress end a round")
    add_state_dir_option(parser)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where load.{json,md} go")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    plan = Plan(args.entities, args.clients, args.window, args.poll, deadline=args.deadline, stall=args.stall)
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", flush=True)

    command = (
        f"python -m ops.load --clients {plan.clients} --entities {plan.entities} --rounds {args.rounds} "
        f"--window {plan.window} --poll {plan.poll}"
    )
    report: dict[str, Any] = {
        "command": command,
        "machine": f"{os.cpu_count()} cores shared, Python {platform.python_version()}",
        "niceness": os.nice(0),
        "window": plan.window,
        "poll": plan.poll,
        "rounds": [],
    }
    with local_cloud(args.dir, say) as (out, started_here):
        if not out.api_url:
            raise SystemExit("the local cloud serves no REST API")
        report["cloud"] = "started fresh for this run" if started_here else "one already running"
        target = target_of(out)
        seed_service(target.client("dynamodb"), out.outputs)
        for number in range(1, args.rounds + 1):
            say(f"round {number}: {plan.entities} requests from {plan.clients} clients to {out.api_url} ...")
            before, cpu_before = _load_average(), _cloud_cpu_seconds(out.endpoint)
            figures = Round(out.api_url, plan, label=f"{number}").run()
            cpu = _cloud_cpu_seconds(out.endpoint) - cpu_before
            figures.update(
                load_before=before,
                load_after=_load_average(),
                cloud_cpu_per_entity=round(cpu / plan.entities, 3),
            )
            report["rounds"].append(figures)
            say(
                f"round {number}: {figures['entities_per_second']} entities/s, end to end p50 "
                f"{_ms(figures['end_to_end_ms'], 'p50')} s, final {figures['final']}, not accepted "
                f"{figures['not_accepted']}, connection errors {figures['connection_errors'] or 0}, "
                f"local cloud CPU {figures['cloud_cpu_per_entity']} s per entity, "
                f"load {figures['load_after']}"
            )
            ok = _write(report, args.results, time.monotonic() - started)  # each round, in case of Ctrl-C
    print(_markdown(report))
    print(f"load: {report['verdict']} (written to {args.results / 'load.md'})")
    return 0 if ok else 1


def _write(report: dict[str, Any], results: Path, seconds: float) -> bool:
    verdict, change, ok = _verdict(report["rounds"])
    report.update(seconds=round(seconds, 1), last_vs_first=round(change, 3), verdict=verdict)
    results.mkdir(parents=True, exist_ok=True)
    (results / "load.json").write_text(json.dumps(report, indent=2) + "\n")
    (results / "load.md").write_text(_markdown(report))
    return ok


if __name__ == "__main__":
    sys.exit(main())
