"""Lambda's Python runtime, written once for both clouds: the context object and the handler loader
(`LambdaContext`, `load_handler`: the simulator calls handlers in its own process with them, from
the same environment, `emulator.functions.lambda_environment`), and the bootstrap of one local
worker process (`main`).

The local cloud starts it (`localcloud.workers`) as `python -I lambda_runtime.py` with the
function's environment and the unzipped asset as the working directory. It imports nothing from the
project: `-I` keeps the parent's PYTHONPATH and the project tree off `sys.path`, and the task root
goes first, as /var/task does on Lambda; the venv's site-packages stand in for the Powertools layer.

Protocol (JSON lines): the parent writes one request per line on stdin,
`{"id": ..., "event": ..., "deadline_ms": ..., "arn": ...}`; this process answers on a private
copy of the original stdout with `{"id": ..., "ok": true, "result": ...}` or
`{"id": ..., "ok": false, "error": {"errorType", "errorMessage", "stackTrace"}}`. Before the
first request it says `{"ready": true}` or `{"ready": false, "error": ...}` (the init phase).
File descriptor 1 is pointed at stderr, so whatever the handler prints lands in the function's
log, as it does in CloudWatch. EOF on stdin ends the process.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any


class LambdaContext:
    """The attributes and the one method of the Python runtime's context object."""

    def __init__(
        self,
        request_id: str,
        deadline_ms: int,
        invoked_function_arn: str,
        *,
        function_name: str,
        memory_limit_in_mb: str,
        log_group_name: str,
        log_stream_name: str,
        function_version: str = "$LATEST",
    ) -> None:
        self.aws_request_id = request_id
        self.invoked_function_arn = invoked_function_arn
        self.function_name = function_name
        self.function_version = function_version
        # A string, as in the AWS runtime (awslambdaric reads it from the environment).
        self.memory_limit_in_mb = memory_limit_in_mb
        self.log_group_name = log_group_name
        self.log_stream_name = log_stream_name
        self.identity = None
        self.client_context = None
        self._deadline_ms = deadline_ms

    @classmethod
    def from_environ(
        cls,
        request_id: str,
        deadline_ms: int,
        invoked_function_arn: str,
        environ: Mapping[str, str] | None = None,
    ) -> LambdaContext:
        """The context as the function's environment describes it (a worker's: its own)."""
        env = os.environ if environ is None else environ
        return cls(
            request_id,
            deadline_ms,
            invoked_function_arn,
            function_name=env.get("AWS_LAMBDA_FUNCTION_NAME", ""),
            function_version=env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            memory_limit_in_mb=env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
            log_group_name=env.get("AWS_LAMBDA_LOG_GROUP_NAME", ""),
            log_stream_name=env.get("AWS_LAMBDA_LOG_STREAM_NAME", ""),
        )

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _error(exc: BaseException, error_type: str | None = None) -> dict[str, Any]:
    return {
        "errorType": error_type or type(exc).__name__,
        "errorMessage": str(exc),
        # The user's frames only, as the AWS runtime reports them.
        "stackTrace": traceback.format_list(
            [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename != __file__]
        ),
    }


class HandlerInitError(Exception):
    """The init phase failed: `error_type` is what Lambda reports (Runtime.ImportModuleError, ...)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def load_handler(spec: str) -> Callable[[Any, LambdaContext], Any]:
    module_name, _, function_name = spec.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise HandlerInitError(
            "Runtime.ImportModuleError", f"Unable to import module '{module_name}': {exc}"
        ) from exc
    except SyntaxError as exc:
        raise HandlerInitError(
            "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {exc}"
        ) from exc
    handler = getattr(module, function_name, None)
    if handler is None:
        raise HandlerInitError(
            "Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module_name}'"
        )
    return handler


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _invoke(handler: Callable[[Any, LambdaContext], Any], request: dict[str, Any]) -> dict[str, Any]:
    context = LambdaContext.from_environ(request["id"], int(request["deadline_ms"]), request["arn"])
    try:
        result = handler(request["event"], context)
    except Exception as exc:  # noqa: BLE001 - any handler exception is the invocation's error
        error = _error(exc)
        # The AWS runtime logs the error before returning it.
        sys.stderr.write(f"[ERROR] {error['errorType']}: {error['errorMessage']}\n")
        sys.stderr.write("".join(error["stackTrace"]))
        return {"id": request["id"], "ok": False, "error": error}
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return {"id": request["id"], "ok": False, "error": _error(exc, "Runtime.MarshalError")}
    return {"id": request["id"], "ok": True, "result": result}


def main() -> None:
    # The parent owns shutdown: Ctrl-C in a foreground `make local` must not kill a step midway.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Private copies of the pipes; the handler's stdin is /dev/null and its stdout goes to the log.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    task_root = os.environ.get("LAMBDA_TASK_ROOT", os.getcwd())
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [task_root] + [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        handler = load_handler(os.environ["_HANDLER"])
    except HandlerInitError as exc:
        _send(channel, {"ready": False, "error": _error(exc, exc.error_type)})
        return
    except Exception as exc:  # noqa: BLE001 - an exception at import time: the runtime reports its class name
        _send(channel, {"ready": False, "error": _error(exc)})
        return
    _send(channel, {"ready": True})
    for line in requests:
        if line.strip():
            _send(channel, _invoke(handler, json.loads(line)))


if __name__ == "__main__":
    main()
