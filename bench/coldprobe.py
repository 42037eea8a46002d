"""One cold invocation, timed in a fresh interpreter: `python coldprobe.py <case> <module>`.

bench/coldstart.py runs it from the task root (the function asset, compiled at import). `<case>`
is a first invocation recorded by bench/coldcalls.py (marshal); `<module>` is its handler module,
or the floor (bare_powertools_handler), which is given the recorded calls as its event and makes
them itself. Before the clock starts only built-in modules are loaded (marshal, sys, time), so
everything the function imports is counted. The clock is CPU time (`process_time`): the import,
then the first invocation with its clients. botocore's answers come from the recording through a
`before-send` hook, registered (on every session built after it, as botocore's own handlers are)
once the module is imported and before it is invoked: botocore serializes, signs and parses as it
does on AWS; no request leaves the process (a call the hook misses meets the dead proxy
bench/coldstart.py sets and fails, and so does the run). Prints one JSON line: the times, the
invocation's result and how many recorded answers went unused.
"""

import marshal
import sys
import time

TYPE_CHECKING = False  # typing's own flag would import typing before the clock starts
if TYPE_CHECKING:  # annotations only
    from collections.abc import Iterator

    from botocore.awsrequest import AWSPreparedRequest


class _Context:
    """What Powertools and the handlers read from the Lambda context."""

    memory_limit_in_mb = 256
    aws_request_id = "00000000-0000-4000-8000-000000000000"
    function_version = "$LATEST"
    log_group_name = "/aws/lambda/coldstart"
    log_stream_name = "coldstart"

    def __init__(self, function_name: str, timeout: int) -> None:
        self.function_name = function_name
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self._timeout_ms = timeout * 1000

    def get_remaining_time_in_millis(self) -> int:
        return self._timeout_ms


class _Raw:
    """The raw body botocore reads an answer from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: object) -> "Iterator[bytes]":
        yield self._body


def _replay(answers: list) -> list:
    """Answer every request botocore sends with the next recorded answer; returns what is left."""
    from botocore.awsrequest import AWSResponse  # noqa: PLC0415 - after the import being timed
    from botocore.handlers import BUILTIN_HANDLERS  # noqa: PLC0415

    left = list(answers)

    def answer(request: "AWSPreparedRequest", event_name: str, **_: object) -> AWSResponse:
        if not left:
            raise RuntimeError(f"replay: {event_name} sent with no recorded answer left")
        operation, status, headers, body = left.pop(0)
        if event_name.rpartition(".")[2] != operation:
            raise RuntimeError(f"replay: {event_name} sent where the recording has {operation}")
        return AWSResponse(request.url, status, headers, _Raw(body))

    BUILTIN_HANDLERS.append(("before-send", answer))
    return left


def main() -> None:
    with open(sys.argv[1], "rb") as file:
        case = marshal.load(file)  # noqa: S302 - written by bench/coldstart.py for this run
    module = sys.argv[2]
    event = case["event"] if module == case["module"] else {"calls": case["calls"]}
    context = _Context(case["function_name"], case["timeout"])
    start = time.process_time()
    handler = __import__(module, fromlist=["handler"]).handler
    imported = time.process_time()
    left = _replay(case["answers"])
    result = handler(event, context)
    invoked = time.process_time()
    import json  # noqa: PLC0415 - once the clock has stopped

    line = {
        "import_seconds": imported - start,
        "cold_seconds": invoked - start,
        "result": result,
        "unused_answers": len(left),
    }
    sys.stdout.write("\n" + json.dumps(line, default=str) + "\n")


if __name__ == "__main__":
    main()
