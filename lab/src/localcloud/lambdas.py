"""Lambda execution as on AWS: one pool of worker processes per function, warm workers reused.

A worker (`localcloud.workers`) that overran its timeout or died is replaced by its pool on the
next call, as Lambda replaces a sandbox.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from emulator.functions import FunctionSpec, lambda_environment
from emulator.shapes import error_payload
from localcloud.config import DEFAULT_MAX_WORKERS
from localcloud.workers import (
    INIT_TIMEOUT_SECONDS,
    RUNTIME_SCRIPT,
    InvokeResult,
    LogSink,
    Worker,
)

# What every worker sees besides the function's own variables, like the Lambda execution
# environment (credentials are fake: the local endpoint accepts any).
_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "ASIALOCALCLOUD000000",
    "AWS_SECRET_ACCESS_KEY": "localcloud",
    "AWS_SESSION_TOKEN": "localcloud",
}
# Copied from the local cloud's own environment when set (locale, temp dir, PATH for subprocesses).
_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME", "SYSTEMROOT")


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
            kept = worker.alive() and not self._closed
            if kept:
                self._idle.append((worker, time.monotonic()))
            else:
                worker.kill()
            self._cond.notify()
        if not kept:  # the pool's pids changed (a warm worker going back idle changes nothing)
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
        max_workers: int = DEFAULT_MAX_WORKERS,
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
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:0",
                "LAMBDA_TASK_ROOT": str(task_root),
                "LAMBDA_RUNTIME_DIR": str(RUNTIME_SCRIPT.parent),
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                # No X-Ray daemon locally: Powertools Tracer would only warn about missing segments.
                "POWERTOOLS_TRACE_DISABLED": "true",
                # One endpoint serves every action: StartSyncExecution's `sync-` host prefix would
                # make it `sync-localhost`, which resolves nowhere (patches_express.py, E6).
                "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
                **_FAKE_CREDENTIALS,
            }
        )
        env.update(lambda_environment(spec, log_stream=f"localcloud/{spec.name}"))
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
