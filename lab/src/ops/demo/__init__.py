"""`make demo`: the whole service offline, driven as a client would, ending with the invariants.

    python -m ops.demo            # uses a running local cloud, else starts one and stops it after
    python -m ops.demo --workflow express     # the same on an Express stage

What it plays comes from the service's declaration and its proof (`ops.demo.plan`), with progress
on the way (each scenario checks what a client can see):
1. seeds the reference data (`ops.seed`, and the proof's `prepare`);
2. the happy path's request over HTTP, sent again (identical replays), the same key with another
   body (422), no key (400) and a body that is not JSON (400);
3. each catch route's request (`ops.outcomes`): its step fails, the saga compensates what was
   done (the proof's `observe`: what it touched is back), it ends in its status;
4. a crash inside the happy path's leased step (the sample's payment) after the provider
   call: crash injection armed through the local cloud's control route (exit mode: the Lambda
   worker process really dies); the stuck execution is stopped, as an operator would, rather
   than waiting out its retries;
5. meanwhile, duplicate deliveries: the first request's queue message sent again straight to SQS
   (the worker's dedup answers, still one execution);
6. once the dead attempt's lease has run out, `ops.redrive` restarts the execution with the same
   token: the first step is skipped by its fence; the crash step's takeover finds the dead
   attempt's effect at the provider (reconcile) and records it: one provider call, one effect;
On Express (`--workflow express`, `make demo WORKFLOW=express`: stage local-express, state
directory `.localcloud-express`), 4-6 differ as Express does: one crash is ridden out inside the
execution (its FenceBusy waits fit its time limit, then a takeover finds the effect), so every
attempt that takes the fence over dies too until the execution's retries give up (FAILED, about
90 s; Express cannot be stopped or redriven); crash injection is switched off, and the API's queue
brings the message back: the worker runs the run again under the same token, the first step is
skipped by its fence and the takeover records the effect found at the provider;
then a report per request (step statuses from their fences, dedup hits, replays, the provider's
calls and effects), the story of each written as a picture (`<state dir>/stories/<id>.html`, and
`.json` so `make story` shows it after the demo's own local cloud is gone), and a last line
`invariants: OK` or `invariants: VIOLATED: <what>` (exit 1).

The local cloud is `ops.lifecycle`'s, as for `make fuzz` and `make load`: one the demo started is
stopped at the end, also on errors, Ctrl-C and SIGTERM; a running one is left running (crash
injection put back as it was).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import IO

from botocore.exceptions import ClientError

from ops.demo import report as reporting
from ops.demo.crash import crash, queue_restart, redrive_crashed
from ops.demo.scenarios import Demo, DemoError
from ops.lifecycle import StageMismatch, fresh_crash_dir, local_cloud
from ops.local import process
from ops.local.outputs import Outputs
from ops.target import add_state_dir_option


def play(
    out: Outputs,
    *,
    restore: bool,
    console: IO[str] = sys.stdout,
    state_dir: Path,
    started: float | None = None,
) -> list[str]:
    """Every scenario against a running local cloud, the report, and what went wrong (empty: all
    promises kept and every invariant holds). `restore`: put its crash injection back after.
    `state_dir`: the local cloud's state directory; each request's story is written under it."""
    demo = Demo(out, console=console, state_dir=state_dir)
    if started is not None:
        demo.started = started
    failure: str | None = None
    try:
        with fresh_crash_dir(out, restore=restore) as crash_dir:
            demo.seed()
            first = demo.happy_path()
            for outcome in demo.plan.catches:
                demo.catch_route(outcome)
            crashed, arn = crash(demo, crash_dir)
            demo.duplicates(first)  # while the dead attempt's lease runs out
            if demo.express:
                queue_restart(demo, crashed)
            else:
                redrive_crashed(demo, crashed, arn)
    except (DemoError, ClientError, OSError) as error:
        failure = str(error)
        demo.say(f"demo stopped: {failure}")
    report = reporting.settle(demo)
    console.write(reporting.report(demo, report) + "\n\n")
    console.write(report.to_text() + "\n\n")
    demo.section("the story of each request (make story ID=<id>; FORMAT=html for the picture)")
    reporting.write_stories(demo, state_dir)
    problems = [*(f"demo: {p}" for p in demo.problems), *([f"demo: {failure}"] if failure else [])]
    return problems + report.violations


def verdict(problems: list[str]) -> str:
    """The demo's last line."""
    return "invariants: OK" if not problems else f"invariants: VIOLATED: {'; '.join(problems)}"


# The stage each workflow type's demo deploys (cdk.json).
STAGES = {"standard": "local", "express": "local-express"}


def run(state_dir: Path, console: IO[str] = sys.stdout, *, workflow: str = "standard") -> int:
    started = time.monotonic()

    def say(message: str) -> None:
        console.write(f"[{time.monotonic() - started:5.1f}s] {message}\n")
        console.flush()

    with local_cloud(state_dir, say, stage=STAGES[workflow]) as (out, started_here):
        problems = play(out, restore=not started_here, console=console, started=started, state_dir=state_dir)
        say(f"demo took {time.monotonic() - started:.1f}s")
    console.write(verdict(problems) + "\n")
    console.flush()
    return 0 if not problems else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.demo", description=__doc__.splitlines()[0])
    add_state_dir_option(parser)
    parser.add_argument(
        "--workflow",
        choices=sorted(STAGES),
        default="standard",
        help="the workflow type to demonstrate (express: stage local-express; its own state directory, "
        "`<dir>-express`, unless --dir names one)",
    )
    args = parser.parse_args(argv)
    state_dir = args.dir
    if args.workflow != "standard" and "--dir" not in (argv if argv is not None else sys.argv):
        state_dir = args.dir.with_name(f"{args.dir.name}-{args.workflow}")
    try:
        return run(state_dir, workflow=args.workflow)
    except KeyboardInterrupt:
        print("\ninterrupted; nothing left running", file=sys.stderr)
        return 130
    except (process.StartError, StageMismatch) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
