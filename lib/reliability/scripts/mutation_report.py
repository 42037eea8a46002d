"""Write results/mutation.md from a finished `mutmut run` (make mutation).

Reads what `mutmut results --all true` printed (one `<mutant>: <status>` line each, saved by the
recipe to mutants/results.txt) and counts it per module; the survivors are listed by name, to be
killed with a test or argued equivalent in results/survivors.md (written by hand).

Usage: python lib/reliability/scripts/mutation_report.py COMMAND (the command that ran mutmut)
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
RESULTS = LIBRARY / "mutants" / "results.txt"
REPORT = LIBRARY / "results" / "mutation.md"
NOT_CHECKED = "not checked"


def parse(text: str) -> dict[str, str]:
    """mutant name -> status ("killed", "survived", "no tests", "timeout", ...)."""
    found = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("reliability."):
            found[name] = status
    return found


def module_of(mutant: str) -> str:
    """`reliability.keys.x_derive_key__mutmut_3` -> `reliability.keys`."""
    return mutant.split("__mutmut_", maxsplit=1)[0].rsplit(".", 1)[0]


def render(statuses: dict[str, str], command: str) -> str:
    """Counts of the mutants this run checked, per module; modules it left unchecked are named."""
    checked = {m: s for m, s in statuses.items() if s != NOT_CHECKED}
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for mutant, status in checked.items():
        by_module[module_of(mutant)][status] += 1
    unchecked = sorted({module_of(m) for m in statuses} - set(by_module))
    total = Counter(checked.values())
    killed = total["killed"]
    others = ", ".join(f"{count} {status}" for status, count in sorted(total.items()) if status != "killed")
    lines = [
        "# Mutation testing of the reliability library",
        "",
        f"Command: `{command}` (mutmut 3.8.1, the library's own tests, lib/reliability).",
        "",
        f"{len(checked)} mutants checked, {killed} killed ({100 * killed / max(len(checked), 1):.1f} %)"
        + (f", {others}" if others else "")
        + f"; {len(statuses) - len(checked)} not checked by this run.",
        "",
        "| module | checked | killed | survived | other | killed % | not checked |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    left = Counter(module_of(m) for m, s in statuses.items() if s == NOT_CHECKED)
    for module, counts in sorted(by_module.items()):
        n = sum(counts.values())
        other = n - counts["killed"] - counts["survived"]
        lines.append(
            f"| `{module}` | {n} | {counts['killed']} | {counts['survived']} | {other} "
            f"| {100 * counts['killed'] / n:.1f} | {left[module]} |"
        )
    if unchecked:
        lines += ["", "Not checked by this run: " + ", ".join(f"`{m}`" for m in unchecked) + "."]
    lines += ["", "## Not killed (each argued in survivors.md)", ""]
    lines += [f"- `{m}`: {s}" for m, s in sorted(checked.items()) if s != "killed"] or ["None."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    statuses = parse(RESULTS.read_text())
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(render(statuses, " ".join(argv) or "make mutation"))
    print(f"wrote {REPORT.relative_to(LIBRARY.parents[1])}: {len(statuses)} mutants")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
