"""`python -m scale run|sheet` (what `make scale` and `make scale-sheet` run).

run: the burst and the soak on the planned topology, the burst again on the mutant without the
capacity settings; prints the figures and writes scale/results/report.{json,md}. Exit 1 when a
planned run loses an order, puts a legitimate message in a DLQ or violates an invariant, or when
the mutant does not.
sheet: writes docs/scale.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from emulator.synth import synthesize
from scale import scenarios
from scale.report import failed, render, table
from scale.sheet import render as render_sheet
from scale.topology import read, without_capacity

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "scale" / "results"
SHEET = ROOT / "docs" / "scale.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scale", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "sheet"])
    parser.add_argument("--stage", default="prod", help="the stage whose templates to load (default prod)")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    topology = read(synthesize(args.stage), args.stage)
    if args.command == "sheet":
        SHEET.parent.mkdir(parents=True, exist_ok=True)
        SHEET.write_text(render_sheet(topology))
        print(f"wrote {SHEET.relative_to(ROOT)}")
        return 0
    runs = {
        "burst": scenarios.run(topology, scenarios.BURST, seed=args.seed),
        "burst without the capacity plan (mutant)": scenarios.run(
            without_capacity(topology), scenarios.BURST, seed=args.seed
        ),
        "soak": scenarios.run(topology, scenarios.soak(scenarios.soak_rate(topology)), seed=args.seed),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "report.json").write_text(json.dumps(runs, indent=2) + "\n")
    (RESULTS / "report.md").write_text(render(runs))
    print(table(runs))
    print(f"wrote {(RESULTS / 'report.md').relative_to(ROOT)} and report.json")
    problems = failed(runs)
    for problem in problems:
        print(f"FAIL: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
