"""Send a sample event to a deployed function: `python -m ops.invoke events/worker/batch.json`.

The function defaults to the event's folder name (`events/<function>/...`). The target is the
local cloud unless `AWS_ENDPOINT_URL` or `AWS_PROFILE` names another (see ops.target).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ops.stack_outputs import function_output
from ops.target import Target, run_tool


def invoke(lambda_client: Any, *, function_name: str, event: Any) -> tuple[Any, str | None]:
    """Invoke synchronously; returns the decoded payload and the function error, if any."""
    response = lambda_client.invoke(
        FunctionName=function_name,
        InvocationType="RequestResponse",
        Payload=json.dumps(event).encode(),
    )
    raw = response["Payload"].read()
    payload = json.loads(raw) if raw else None
    return payload, response.get("FunctionError")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.invoke", description=__doc__.splitlines()[0])
    parser.add_argument("event", type=Path, help="a JSON event file, e.g. events/api/create_order.json")
    parser.add_argument("--function", help="function name suffix (default: the event's folder)")
    args = parser.parse_args(argv)

    function = args.function or args.event.parent.name
    target = Target.resolve()
    payload, error = invoke(
        target.client("lambda"),
        function_name=target.output(function_output(function)),
        event=json.loads(args.event.read_text()),
    )
    print(json.dumps(payload, indent=2))
    if error:
        print(f"{function}: function error ({error})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    run_tool(main)
