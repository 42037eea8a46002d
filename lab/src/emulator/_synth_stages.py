"""Synthesize several stages in one process: `python -m emulator._synth_stages '{"dev": "<outdir>"}'`.

Does what the project's app.py does (its `build`, `[tool.retrysafe] app`), once per stage, with the
cdk.json context given explicitly. One process pays the jsii start-up and aws-cdk-lib's first
synthesis (most of the time) once for all stages.
"""

from __future__ import annotations

import importlib
import json
import sys

from aws_cdk import App

from emulator.project import setting
from emulator.synth import cdk_context


def main(argv: list[str]) -> int:
    outdirs: dict[str, str] = json.loads(argv[1])
    module, _, function = setting("app").partition(":")
    build = getattr(importlib.import_module(module), function)
    for stage, outdir in outdirs.items():
        app = App(outdir=outdir, context=cdk_context(stage))
        build(app)
        try:
            app.synth()
        except RuntimeError as e:
            print(f"stage {stage}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
