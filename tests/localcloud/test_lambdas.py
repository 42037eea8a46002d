"""The Lambda worker pool on its own: processes, environment, timeouts, crashes, warm reuse."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.functions import FunctionSpec
from localcloud.lambdas import LambdaRuntime


def spec(code: bytes, *, handler: str = "fixture.step", timeout: int = 2, env: dict[str, str] | None = None):
    return FunctionSpec(
        name="fx-step",
        arn="arn:aws:lambda:us-east-1:123456789012:function:fx-step",
        handler=handler,
        runtime="python3.11",
        timeout=timeout,
        memory_mb=256,
        region="us-east-1",
        environment=env or {"TABLE_NAME": "t"},
        code=code,
    )


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[LambdaRuntime]:
    lambdas = LambdaRuntime(
        state_dir=tmp_path, endpoint="http://127.0.0.1:9", max_workers=2, extra_env={"EXTRA": "yes"}
    )
    yield lambdas
    lambdas.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_runs_handler_in_its_own_process_with_the_function_environment(runtime, handlers_zip):
    # Given the fixture code; When invoked; Then it ran in another process with Lambda's variables
    result = runtime.invoke(spec(handlers_zip), {"action": "ok"})

    assert not result.errored
    payload = json.loads(result.payload)
    assert payload["pid"] != os.getpid()
    assert payload["endpoint"] == "http://127.0.0.1:9"
    assert payload["memory"] == "256"
    assert payload["arn"].endswith(":function:fx-step")
    assert "START RequestId" in (runtime.state_dir / "logs" / "fx-step.log").read_text()


def test_warm_worker_is_reused(runtime, handlers_zip):
    first = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)["pid"]
    second = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)["pid"]

    assert first == second
    assert runtime.workers() == {"fx-step": [first]}


def test_the_workers_file_is_written_when_the_workers_change_not_at_every_call(runtime, handlers_zip):
    # Given a warm worker, listed in workers.json
    pid = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)["pid"]
    listing = runtime.state_dir / "workers.json"
    written = listing.stat().st_mtime_ns
    time.sleep(0.05)

    # When it serves more calls; Then the file is not rewritten
    runtime.invoke(spec(handlers_zip), {})
    runtime.invoke(spec(handlers_zip), {})
    assert listing.stat().st_mtime_ns == written

    # When the worker dies; Then the file says so
    runtime.invoke(spec(handlers_zip), {"action": "crash"})
    assert json.loads(listing.read_text()).get("fx-step", []) != [pid]


def test_handler_exception_comes_back_with_its_class_name(runtime, handlers_zip):
    result = runtime.invoke(spec(handlers_zip), {"action": "raise"})

    assert result.errored
    error = json.loads(result.payload)
    assert error["errorType"] == "FixtureError"
    assert error["errorMessage"] == "asked to fail"
    assert any("fixture.py" in frame for frame in error["stackTrace"])
    assert not any("lambda_runtime.py" in frame for frame in error["stackTrace"])


def test_timeout_kills_the_worker_and_reports_sandbox_timedout(runtime, handlers_zip):
    pid = json.loads(runtime.invoke(spec(handlers_zip, timeout=1), {}).payload)["pid"]

    started = time.monotonic()
    result = runtime.invoke(spec(handlers_zip, timeout=1), {"action": "sleep", "seconds": 30})

    assert time.monotonic() - started < 5
    assert result.error_type == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in json.loads(result.payload)["errorMessage"]
    assert not alive(pid)
    assert not runtime.invoke(spec(handlers_zip, timeout=1), {}).errored  # a fresh worker serves


def test_worker_killed_by_a_signal_is_a_runtime_exit_error(runtime, handlers_zip):
    result = runtime.invoke(spec(handlers_zip), {"action": "crash"})

    assert result.error_type == "Runtime.ExitError"
    assert "signal: killed" in json.loads(result.payload)["errorMessage"]
    assert not runtime.invoke(spec(handlers_zip), {}).errored


def test_worker_killed_from_outside_mid_invocation(runtime, handlers_zip):
    pid = json.loads(runtime.invoke(spec(handlers_zip, timeout=10), {}).payload)["pid"]
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()

    result = runtime.invoke(spec(handlers_zip, timeout=10), {"action": "sleep", "seconds": 5})

    killer.join()
    assert result.error_type == "Runtime.ExitError"
    assert not runtime.invoke(spec(handlers_zip, timeout=10), {}).errored


def test_import_error_is_reported_like_the_lambda_runtime(runtime, handlers_zip):
    result = runtime.invoke(spec(handlers_zip, handler="missing_module.handler"), {})

    assert result.error_type == "Runtime.ImportModuleError"


def test_busy_workers_scale_up_to_the_cap(runtime, handlers_zip):
    # Given max_workers=2; When three slow calls run at once; Then two processes serve all three
    results: list[dict] = []

    def call() -> None:
        results.append(
            json.loads(runtime.invoke(spec(handlers_zip), {"action": "sleep", "seconds": 0.5}).payload)
        )

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 3
    assert len({result["pid"] for result in results}) == 2


def test_new_code_or_config_replaces_the_pool(runtime, handlers_zip):
    old = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)["pid"]

    new = json.loads(runtime.invoke(spec(handlers_zip, env={"TABLE_NAME": "other"}), {}).payload)["pid"]

    assert new != old
    assert not alive(old)


def test_crash_injection_env_reaches_new_workers(runtime, handlers_zip):
    runtime.set_extra_env({"RETRYSAFE_CRASH_POINTS": "charge.after"})

    payload = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)

    assert payload["crash_points"] == "charge.after"


def test_close_leaves_no_worker(runtime, handlers_zip):
    pid = json.loads(runtime.invoke(spec(handlers_zip), {}).payload)["pid"]

    runtime.close()

    assert not alive(pid)


def test_retiring_workers_lets_a_call_in_flight_finish(runtime, handlers_zip):
    # Given a call in flight; When crash injection is switched (workers retired); Then it completes
    results: list = []
    call = threading.Thread(
        target=lambda: results.append(runtime.invoke(spec(handlers_zip), {"action": "sleep", "seconds": 1}))
    )
    call.start()
    time.sleep(0.5)

    runtime.set_extra_env({"RETRYSAFE_CRASH_POINTS": "x"})
    call.join()

    assert not results[0].errored
    assert not alive(json.loads(results[0].payload)["pid"])


def test_prewarm_starts_one_worker_per_function(runtime, handlers_zip):
    broken = FunctionSpec(
        **{**spec(handlers_zip).__dict__, "name": "fx-broken", "arn": "arn:x:broken", "handler": "nope.h"}
    )

    results = runtime.prewarm([spec(handlers_zip), broken])

    assert results["fx-step"] is None
    assert "Runtime.ImportModuleError" in (results["fx-broken"] or "")
    assert list(runtime.workers()) == ["fx-step"]
