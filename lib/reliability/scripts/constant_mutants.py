"""Run the library's tests once per constant mutant (tests/constant_mutants.py); write the results.

mutmut does not mutate module-level constants; these hand-written mutants do (the claim and
owner conditions, what ending a lease removes, the transition and refusal tables, the limits, the
error classifications). Each run sets ``RELIABILITY_CONSTANT_MUTANT`` and stops at the first
failing test: a failure kills the mutant, a green suite lets it survive, anything else (the
mutant could not be applied, pytest could not start) is an error. Writes
results/constant-mutants.md; exit 1 unless every mutant is killed.

Usage: python lib/reliability/scripts/constant_mutants.py [NAME ...] (default: all); `make mutation`
runs it after mutmut (CONSTANT_MUTANTS="NAME ..." narrows it, CONSTANT_MUTANTS=none skips it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
REPORT = LIBRARY / "results" / "constant-mutants.md"
PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p", "no:randomly"]
# Every test file runs; these first: fast, and they state the tables and bounds (a killed mutant
# stops at its first failure, so the order only saves time).
FIRST = ("test_record_states.py", "test_keys.py", "test_errors.py", "test_fence_ends.py")
# pytest's exit codes: 0 all passed, 1 some test failed; the rest say the run itself went wrong.
STATUS = {0: "survived", 1: "killed"}


def run_one(name: str) -> tuple[str, str, float]:
    """(status, the first failing test or the error's last line, seconds)."""
    # this checkout's library first (the virtualenv's editable install may be another checkout's)
    path = os.pathsep.join([str(LIBRARY / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "RELIABILITY_CONSTANT_MUTANT": name}
    started = time.monotonic()
    files = sorted((LIBRARY / "tests").glob("test_*.py"), key=lambda f: (f.name not in FIRST, f.name))
    done = subprocess.run(  # noqa: S603 - our own pytest
        [*PYTEST, *(str(f.relative_to(LIBRARY)) for f in files)],
        cwd=LIBRARY,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    status = STATUS.get(done.returncode, "error")
    lines = (done.stdout + done.stderr).splitlines()
    failed = [line.split(" - ")[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    # pytest's summary is its stdout's last line; a test's own stderr output must not stand in for it
    summary = done.stdout.splitlines() or lines
    detail = failed[0].removeprefix("FAILED ") if failed else (summary[-1] if summary else "")
    return status, detail, seconds


def render(rows: list[tuple[str, str, str, str, float]], command: str) -> str:
    killed = sum(1 for row in rows if row[2] == "killed")
    lines = [
        "# Constant mutants of the reliability library",
        "",
        f"Command: `{command}` (the library's own tests; each run stops at its first failure).",
        "",
        f"{len(rows)} mutants, {killed} killed ({100 * killed / max(len(rows), 1):.1f} %).",
        "",
        "| mutant | the slip | status | killed by | s |",
        "| --- | --- | --- | --- | ---: |",
    ]
    lines += [
        f"| `{name}` | {what} | {status} | `{detail}` | {seconds:.0f} |"
        for name, what, status, detail, seconds in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    sys.path[:0] = [str(LIBRARY / "src"), str(LIBRARY / "tests")]
    import constant_mutants  # noqa: PLC0415 - the tests' module, on the path only now

    every = constant_mutants.mutants()
    unknown = [name for name in argv if name not in every]
    if unknown:
        print(f"unknown constant mutants: {unknown}; known: {sorted(every)}", file=sys.stderr)
        return 2
    rows = []
    for name in argv or list(every):
        status, detail, seconds = run_one(name)
        print(f"{name}: {status} ({detail}, {seconds:.0f} s)", flush=True)
        rows.append((name, every[name].what, status, detail, seconds))
    command = " ".join(["python lib/reliability/scripts/constant_mutants.py", *argv])
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(render(rows, command))
    print(f"wrote {REPORT.relative_to(LIBRARY.parents[1])}")
    return 0 if all(row[2] == "killed" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
