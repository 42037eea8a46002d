"""Print what a synthesized cloud assembly contains: resources per type per stack, the stack
outputs, and the cdk-nag result.

    python -m ops.summary [cdk.out]                    # the summary
    python -m ops.summary --acknowledgments [cdk.out]  # every acknowledged cdk-nag finding and why
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def _stacks(assembly: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads((assembly / "manifest.json").read_text())
    names = sorted(n for n, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack")
    return {name: json.loads((assembly / f"{name}.template.json").read_text()) for name in names}


def summarize(assembly: Path) -> str:
    lines: list[str] = []
    for name, template in _stacks(assembly).items():
        counts = Counter(
            r["Type"] for r in template.get("Resources", {}).values() if r["Type"] != "AWS::CDK::Metadata"
        )
        lines.append(f"{name}: {sum(counts.values())} resources")
        lines.extend(f"  {count:4d}  {resource_type}" for resource_type, count in sorted(counts.items()))
        outputs = sorted(k for k in template.get("Outputs", {}) if not k.startswith("ExportsOutput"))
        lines.append(f"  outputs: {', '.join(outputs)}")
        lines.append("")
    report_path = assembly / "validation-report.json"
    if report_path.is_file():
        for plugin in json.loads(report_path.read_text()).get("pluginReports", []):
            acknowledged = Counter(f["ruleName"] for f in plugin.get("suppressedViolations", []))
            lines.append(
                f"cdk-nag {plugin['pluginName']}: {plugin['conclusion']}, "
                f"{len(plugin.get('violations', []))} unacknowledged, "
                f"{sum(acknowledged.values())} acknowledged with a reason"
            )
            lines.extend(f"  {count:4d}  {rule}" for rule, count in sorted(acknowledged.items()))
    return "\n".join(lines)


def acknowledgments(assembly: Path) -> str:
    report = json.loads((assembly / "validation-report.json").read_text())
    lines = []
    for plugin in report.get("pluginReports", []):
        for finding in plugin.get("suppressedViolations", []):
            lines.append(
                f"{finding['ruleName']}\n    at {finding['acknowledgedAt']}\n    {finding['reason']}"
            )
        lines.extend(f"UNACKNOWLEDGED {v['ruleName']}" for v in plugin.get("violations", []))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("assembly", nargs="?", default="cdk.out", type=Path, help="cloud assembly directory")
    parser.add_argument(
        "--acknowledgments",
        action="store_true",
        help="list each acknowledged cdk-nag finding with its reason",
    )
    args = parser.parse_args(argv)
    if not (args.assembly / "manifest.json").is_file():
        print(f"{args.assembly} is not a cloud assembly; run `make synth` first", file=sys.stderr)
        return 2
    print(acknowledgments(args.assembly) if args.acknowledgments else summarize(args.assembly))
    return 0


if __name__ == "__main__":
    sys.exit(main())
