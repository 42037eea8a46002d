"""Lambda execution as on AWS: one pool of worker processes per function, warm workers reused.

Each worker is a separate Python process (`_runtime.py`) with the function's own environment and
its unzipped asset as the task root. Calls are JSON lines over pipes, so nothing process-global in
the server changes per call. The timeout is enforced here: a worker that overruns is killed and the
call fails with `Sandbox.Timedout`; a worker that dies (crash, signal, os._exit) fails the call with
`Runtime.ExitError`. Either way the pool replaces the worker on the next call, as Lambda replaces a
sandbox.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from localcloud.shapes import EXIT_ERROR, TIMED_OUT, error_payload

logger = logging.getLogger("localcloud.lambdas")

RUNTIME_SCRIPT = Path(__file__).with_name("_runtime.py")
# Lambda's init phase may take up to 10 s on AWS; a shared 2-core machine importing boto3,
# Powertools and pydantic in several workers at once needs more headroom than that.
INIT_TIMEOUT_SECONDS = 60.0
# What every worker sees besides the function's own variables, like the Lambda execution
# environment (credentials are fake: the local endpoint accepts any).
_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "ASIALOCALCLOUD000000",
    "AWS_SECRET_ACCESS_KEY": "localcloud",
    "AWS_SESSION_TOKEN": "localcloud",
}
# Copied from the local cloud's own environment when set (locale, temp dir, PATH for subprocesses).
_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME", "SYSTEMROOT")


@dataclass(frozen=True)
class FunctionSpec:
    """Everything about a deployed function that decides how its workers are started."""

    name: str
    arn: str
    handler: str
    runtime: str
    timeout: float
    memory_mb: int
    region: str
    environment: Mapping[str, str]
    code: bytes = field(repr=False)

    @property
    def code_digest(self) -> str:
        return hashlib.sha256(self.code).hexdigest()

    def fingerprint(self) -> str:
        """Changes when the code or configuration changes: the pool is then replaced."""
        parts = [
            self.code_digest,
            self.handler,
            str(self.timeout),
            str(self.memory_mb),
            json.dumps(dict(self.environment), sort_keys=True),
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


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


class FunctionPool:
    """The warm workers of one function version: at most `max_workers`, callers wait beyond that."""

    def __init__(
        self,
        spec: FunctionSpec,
        *,
        task_root: Path,
        env: dict[str, str],
        sink: LogSink,
        max_workers: int,
        on_change: Callable[[], None],
    ) -> None:
        self.spec = spec
        self._task_root = task_root
        self._env = env
        self._sink = sink
        self._max = max_workers
        self._idle: list[tuple[Worker, float]] = []
        self._busy: set[Worker] = set()
        self._cond = threading.Condition()
        self._closed = False
        self._on_change = on_change

    def pids(self) -> list[int]:
        with self._cond:
            return sorted(w.pid for w in [*self._busy, *(w for w, _ in self._idle)])

    def _acquire(self) -> tuple[Worker, bool]:
        """A warm worker, else a new one (True) while under the cap, else wait for one."""
        with self._cond:
            while True:
                while self._idle:
                    worker, _ = self._idle.pop()
                    if worker.alive():
                        self._busy.add(worker)
                        return worker, False
                    worker.kill()
                if len(self._busy) < self._max:
                    # Spawned under the lock, so concurrent callers cannot overshoot the cap.
                    worker = Worker(self.spec, task_root=self._task_root, env=self._env, sink=self._sink)
                    self._busy.add(worker)
                    return worker, True
                self._cond.wait()

    def _release(self, worker: Worker) -> None:
        with self._cond:
            self._busy.discard(worker)
            if worker.alive() and not self._closed:
                self._idle.append((worker, time.monotonic()))
            else:
                worker.kill()
            self._cond.notify()
        self._on_change()

    def invoke(self, event: Any) -> InvokeResult:
        request_id = str(uuid.uuid4())
        worker, fresh = self._acquire()
        if fresh:
            self._on_change()
            failure = worker.start()
            if failure is not None:
                self._release(worker)
                return failure
        try:
            return worker.invoke(event, request_id)
        finally:
            self._release(worker)

    def prewarm(self) -> InvokeResult | None:
        """Start one worker through its init phase without invoking it (None: it is warm)."""
        worker, fresh = self._acquire()
        failure = worker.start() if fresh else None
        self._release(worker)
        return failure

    def reap_idle(self, older_than: float) -> None:
        now = time.monotonic()
        with self._cond:
            keep = [(w, t) for w, t in self._idle if now - t < older_than and w.alive()]
            stale = [w for w, t in self._idle if (w, t) not in keep]
            self._idle = keep
        for worker in stale:
            worker.stop()
        if stale:
            self._on_change()

    def close(self, *, force: bool = True) -> None:
        """Stop the idle workers; the busy ones too when `force`, else when their call returns."""
        with self._cond:
            self._closed = True
            workers = [w for w, _ in self._idle] + (list(self._busy) if force else [])
            self._idle = []
            self._cond.notify_all()
        for worker in workers:
            worker.stop()


class LambdaRuntime:
    """All function pools of one local cloud; what the `_invoke_lambda` patch calls into."""

    def __init__(
        self,
        *,
        state_dir: Path,
        endpoint: str,
        max_workers: int = 3,
        idle_seconds: float = 600.0,
        extra_env: Mapping[str, str] | None = None,
        console: IO[str] | None = None,
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.endpoint = endpoint
        self.max_workers = max_workers
        self.idle_seconds = idle_seconds
        self._extra_env = dict(extra_env or {})
        self._console = console
        self._pools: dict[str, FunctionPool] = {}
        self._sinks: dict[str, LogSink] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._reaper = threading.Thread(target=self._reap_loop, name="lambda-reaper", daemon=True)
        self._reaper.start()

    # -- configuration -------------------------------------------------------------------
    def set_extra_env(self, extra_env: Mapping[str, str]) -> None:
        """Change what every worker gets on top of its function's variables (crash injection).

        Warm workers keep the environment they started with, so they are retired: the next call
        of each function starts a fresh worker.
        """
        with self._lock:
            self._extra_env = dict(extra_env)
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close(force=False)  # calls in flight finish with the environment they started with
        self._write_workers_file()

    def worker_env(self, spec: FunctionSpec, task_root: Path) -> dict[str, str]:
        env = {key: os.environ[key] for key in _PASSTHROUGH if key in os.environ}
        env.update(
            {
                "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_REGION": spec.region,
                "AWS_DEFAULT_REGION": spec.region,
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
                "AWS_LAMBDA_FUNCTION_NAME": spec.name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_TIMEOUT": str(int(spec.timeout)),
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
                "AWS_LAMBDA_LOG_STREAM_NAME": f"localcloud/{spec.name}",
                "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:0",
                "LAMBDA_TASK_ROOT": str(task_root),
                "LAMBDA_RUNTIME_DIR": str(RUNTIME_SCRIPT.parent),
                "_HANDLER": spec.handler,
                "TZ": ":UTC",
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                # No X-Ray daemon locally: Powertools Tracer would only warn about missing segments.
                "POWERTOOLS_TRACE_DISABLED": "true",
                **_FAKE_CREDENTIALS,
            }
        )
        env.update(spec.environment)
        env.update(self._extra_env)
        return env

    # -- code ------------------------------------------------------------------------------
    def task_root(self, spec: FunctionSpec) -> Path:
        """The unzipped asset, once per code digest (like /var/task)."""
        root = self.state_dir / "tasks" / f"{spec.name}-{spec.code_digest[:16]}"
        if root.is_dir():
            return root
        tmp = root.with_name(root.name + f".tmp{os.getpid()}-{threading.get_ident()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with zipfile.ZipFile(io.BytesIO(spec.code)) as archive:
            archive.extractall(tmp)
        try:
            tmp.rename(root)
        except OSError:  # another thread won the race: use its copy
            shutil.rmtree(tmp, ignore_errors=True)
        return root

    # -- invocation ------------------------------------------------------------------------
    def _sink(self, name: str) -> LogSink:
        sink = self._sinks.get(name)
        if sink is None:
            sink = LogSink(self.state_dir / "logs" / f"{name}.log", label=name, console=self._console)
            self._sinks[name] = sink
        return sink

    def _pool(self, spec: FunctionSpec) -> FunctionPool:
        fingerprint = spec.fingerprint()
        with self._lock:
            pool = self._pools.get(spec.arn)
            if pool is not None and pool.spec.fingerprint() == fingerprint:
                return pool
            stale = pool
            if not spec.code:
                raise ValueError(f"function {spec.name} has no code")
            task_root = self.task_root(spec)
            pool = FunctionPool(
                spec,
                task_root=task_root,
                env=self.worker_env(spec, task_root),
                sink=self._sink(spec.name),
                max_workers=self.max_workers,
                on_change=self._write_workers_file,
            )
            self._pools[spec.arn] = pool
        if stale is not None:
            stale.close(force=False)
        return pool

    def invoke(self, spec: FunctionSpec, event: Any) -> InvokeResult:
        if self._stopped.is_set():
            return InvokeResult(error_payload("Lambda.ServiceException", "the local cloud is stopping"), True)
        try:
            pool = self._pool(spec)
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            return InvokeResult(error_payload("Runtime.InvalidEntrypoint", str(exc)), True)
        return pool.invoke(event)

    def prewarm(self, specs: list[FunctionSpec]) -> dict[str, str | None]:
        """One warm worker per function, started in parallel; function name -> init error or None."""
        results: dict[str, str | None] = {}

        def warm(spec: FunctionSpec) -> None:
            try:
                failure = self._pool(spec).prewarm()
            except (ValueError, zipfile.BadZipFile, OSError) as exc:
                results[spec.name] = str(exc)
                return
            results[spec.name] = failure.payload if failure else None

        threads = [threading.Thread(target=warm, args=(spec,), daemon=True) for spec in specs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(INIT_TIMEOUT_SECONDS + 5)
        return results

    def workers(self) -> dict[str, list[int]]:
        """Live worker process ids by function name (chaos tooling kills these)."""
        with self._lock:
            pools = list(self._pools.values())
        return {pool.spec.name: pool.pids() for pool in pools if pool.pids()}

    def _write_workers_file(self) -> None:
        path = self.state_dir / "workers.json"
        try:
            tmp = path.with_suffix(f".tmp{threading.get_ident()}")
            tmp.write_text(json.dumps(self.workers(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError:  # the state dir is gone (shutdown): nothing to record
            pass

    def _reap_loop(self) -> None:
        while not self._stopped.wait(min(30.0, self.idle_seconds)):
            with self._lock:
                pools = list(self._pools.values())
            for pool in pools:
                pool.reap_idle(self.idle_seconds)

    def close(self) -> None:
        self._stopped.set()
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()
        for sink in self._sinks.values():
            sink.close()
        self._write_workers_file()
