"""One Lambda worker process and what it runs: the function's spec, its result, its log file.

Each worker is a separate Python process (`lab/src/emulator/lambda_runtime.py`) with the function's own
environment and its unzipped asset as the task root. Calls are JSON lines over pipes, so nothing
process-global in the server changes per call. The timeout is enforced here: a worker that overruns
is killed and the call fails with `Sandbox.Timedout`; a worker that dies (crash, signal, os._exit)
fails the call with `Runtime.ExitError`. Pools of workers are `localcloud.lambdas`.
"""

from __future__ import annotations

import json
import logging
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from emulator import lambda_runtime
from emulator.functions import FunctionSpec
from emulator.shapes import EXIT_ERROR, TIMED_OUT, error_payload

logger = logging.getLogger("localcloud.workers")

RUNTIME_SCRIPT = Path(lambda_runtime.__file__)
# Lambda's init phase may take up to 10 s on AWS; a shared 2-core machine importing boto3,
# Powertools and pydantic in several workers at once needs more headroom than that.
INIT_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class InvokeResult:
    """What `_invoke_lambda` hands back to moto: the payload, whether it is an error, and logs."""

    payload: str
    errored: bool
    logs: str = ""

    @property
    def error_type(self) -> str | None:
        if not self.errored:
            return None
        try:
            return str(json.loads(self.payload).get("errorType"))
        except (ValueError, AttributeError):
            return None


class LogSink:
    """One log file per function (plus the live console when asked), written line by line."""

    def __init__(self, path: Path, *, label: str, console: IO[str] | None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)
        self._label = label
        self._console = console
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        line = line.rstrip("\n")
        with self._lock:
            self._file.write(line + "\n")
            if self._console is not None:
                self._console.write(f"[{self._label}] {line}\n")
                self._console.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


class Worker:
    """One warm process: started once, then fed one event at a time."""

    def __init__(self, spec: FunctionSpec, *, task_root: Path, env: dict[str, str], sink: LogSink) -> None:
        self.spec = spec
        self._sink = sink
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._log_lines: list[str] = []
        self._proc = subprocess.Popen(  # noqa: S603 - our own interpreter and script
            [sys.executable, "-I", str(RUNTIME_SCRIPT)],
            cwd=task_root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.pid = self._proc.pid
        self.ready = False
        threading.Thread(target=self._read_replies, name=f"reply-{self.pid}", daemon=True).start()
        threading.Thread(target=self._read_logs, name=f"log-{self.pid}", daemon=True).start()

    def _read_replies(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                self._replies.put(json.loads(line))
            except ValueError:
                self._sink.write(f"localcloud: unreadable reply from worker {self.pid}: {line!r}")
        self._replies.put(None)  # EOF: the process is gone

    def _read_logs(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._log_lines.append(line)
            self._sink.write(line)

    def alive(self) -> bool:
        return self._proc.poll() is None

    def _exit_description(self) -> str:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "runtime closed its pipe"
        if code < 0:
            try:
                name = signal.Signals(-code).name.removeprefix("SIG").lower()
            except ValueError:
                name = str(-code)
            return f"signal: {'killed' if name == 'kill' else name}"
        return f"exit status {code}"

    def start(self) -> InvokeResult | None:
        """Wait for the init phase; an error result if it failed (the worker is then gone)."""
        try:
            reply = self._replies.get(timeout=INIT_TIMEOUT_SECONDS)
        except queue.Empty:
            self.kill()
            return InvokeResult(error_payload(TIMED_OUT, "Init phase timed out"), True)
        if reply is None:
            return InvokeResult(
                error_payload(EXIT_ERROR, f"Runtime exited during init: {self._exit_description()}"),
                True,
            )
        if not reply.get("ready"):
            self.kill()
            return InvokeResult(json.dumps(reply["error"]), True)
        self.ready = True
        return None

    def invoke(self, event: Any, request_id: str) -> InvokeResult:
        timeout = self.spec.timeout
        deadline = time.time() + timeout
        self._log_lines.clear()
        self._sink.write(f"START RequestId: {request_id} Version: $LATEST")
        started = time.monotonic()
        request = {
            "id": request_id,
            "event": event,
            "deadline_ms": int(deadline * 1000),
            "arn": self.spec.arn,
        }
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            reply = self._replies.get(timeout=timeout)
        except (BrokenPipeError, OSError):
            result = self._result(None, request_id)
        except queue.Empty:
            self.kill()
            result = InvokeResult(
                error_payload(
                    TIMED_OUT,
                    f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds",
                ),
                True,
            )
        else:
            result = self._result(reply, request_id)
        elapsed_ms = (time.monotonic() - started) * 1000
        self._sink.write(f"END RequestId: {request_id}")
        self._sink.write(
            f"REPORT RequestId: {request_id}\tDuration: {elapsed_ms:.2f} ms\t"
            f"Memory Size: {self.spec.memory_mb} MB\tWorker: {self.pid}"
            + (f"\tStatus: {result.error_type}" if result.errored else "")
        )
        return InvokeResult(result.payload, result.errored, "".join(self._log_lines)[-4096:])

    def _result(self, reply: dict[str, Any] | None, request_id: str) -> InvokeResult:
        if reply is None:
            return InvokeResult(
                error_payload(
                    EXIT_ERROR,
                    f"RequestId: {request_id} Error: Runtime exited with error: {self._exit_description()}",
                ),
                True,
            )
        if reply.get("ok"):
            return InvokeResult(json.dumps(reply.get("result")), False)
        return InvokeResult(json.dumps(reply["error"]), True)

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill that does not take
            logger.warning("worker %s did not exit after SIGKILL", self.pid)

    def stop(self) -> None:
        """Close stdin (the runtime exits on EOF); kill it if it does not go."""
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
