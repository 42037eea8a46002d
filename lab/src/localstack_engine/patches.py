"""Every change this project makes to MiniStack 1.5.33, each where MiniStack differs from AWS.

Runs inside the engine (`.venv-ministack`, `python -m localstack_engine`): `install()` applies them
once per process. Each patch wraps the one MiniStack function the gap lives in and checks, when it
is installed, that the code it relies on is still there, so a new MiniStack fails at start rather
than quietly unpatched. tests/localstack_engine/test_patches.py has a test per patch, against the
patched engine.

Gaps handled elsewhere, not patched:
- MiniStack runs Python functions in its own interpreter whatever their runtime and architecture
  (`.venv-ministack`'s Python 3.11 on the host's architecture): the Powertools layer is built for
  that interpreter (`make layer LAYER_ARGS="--python 3.11 --arch x86_64"`), and boto3, which the
  Lambda runtime provides, is in that virtualenv (requirements-ministack.txt).
- A function's environment inherits the engine process's variables: `process` starts the engine
  with a clean environment.
- Stack outputs name `<id>.execute-api.<region>.amazonaws.com`, which is not the engine: the
  LocalStack target reaches APIs through the endpoint (`ops.api_client.api_via_endpoint`).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from ministack import app
from ministack.core import lambda_runtime, tls
from ministack.services import apigateway_v1, lambda_svc
from ministack.services.cloudformation import provisioners

_installed = False
_lock = threading.Lock()

# 1. A Python handler's exception reaches the caller as `errorType: Runtime.HandlerError`, whatever
#    its class (the worker writes only `str(e)`; `_execute_function_warm` hard-codes the type). On
#    AWS errorType is the exception's class name, and Step Functions' Retry and Catch match on it:
#    the workflow's Catch on PaymentDeclined never matched, so the sample's declined order was never
#    compensated. The worker now also writes `type(e).__name__`, and the invocation result carries
#    it. (Timeouts keep Sandbox.Timedout; init errors are left as they are.)
_WORKER_ERROR = '{"status": "error", "error": str(e), "trace": traceback.format_exc()}'
_WORKER_ERROR_TYPED = (
    '{"status": "error", "error": str(e), "errorType": type(e).__name__, "trace": traceback.format_exc()}'
)
_HANDLER_ERROR = "Runtime.HandlerError"
_invocation = threading.local()  # the error type the worker reported for this thread's invocation


def _report_exception_class() -> None:
    script = lambda_runtime._PYTHON_WORKER_SCRIPT
    if script.count(_WORKER_ERROR) != 1:
        raise RuntimeError("MiniStack's Python worker no longer reports handler errors as patch 1 expects")
    lambda_runtime._PYTHON_WORKER_SCRIPT = script.replace(_WORKER_ERROR, _WORKER_ERROR_TYPED)

    worker_invoke = lambda_runtime.Worker.invoke

    def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = worker_invoke(self, *args, **kwargs)
        _invocation.error_type = response.get("errorType") if isinstance(response, dict) else None
        return response

    execute_warm = lambda_svc._execute_function_warm

    def _execute_function_warm(func: Any, event: Any, request_id: str) -> Any:
        _invocation.error_type = None
        result = execute_warm(func, event, request_id)
        body = result.get("body") if isinstance(result, dict) else None
        reported = getattr(_invocation, "error_type", None)
        if (
            result.get("error")
            and isinstance(body, dict)
            and body.get("errorType") == _HANDLER_ERROR
            and reported
        ):
            body["errorType"] = reported
        return result

    lambda_runtime.Worker.invoke = invoke
    lambda_svc._execute_function_warm = _execute_function_warm


# 2. The REST proxy event's requestContext has no `domainName` (nor `domainPrefix`). On AWS it is
#    the host the API answers on, and the API builds its absolute links from it (the entity's
#    status_url), so without it they came out relative. The engine's own execute-api host name is
#    `<api id>.execute-api.<MINISTACK_HOST>:<port>`, which its router serves. API Gateway also
#    always forwards `X-Forwarded-Proto`; MiniStack serves plain HTTP unless USE_SSL is set.
def _add_domain_name() -> None:
    build_event = apigateway_v1._build_lambda_event_v1
    host = app._MINISTACK_HOST  # the virtual host name its router matches execute-api hosts on

    def _build_lambda_event_v1(api_id: str, *args: Any, **kwargs: Any) -> Any:
        event = build_event(api_id, *args, **kwargs)
        context = event.setdefault("requestContext", {})
        context.setdefault("domainName", f"{api_id}.execute-api.{host}:{app._resolve_port()}")
        context.setdefault("domainPrefix", api_id)
        headers = event.get("headers") or {}
        if not any(name.lower() == "x-forwarded-proto" for name in headers):
            scheme = "https" if tls.use_ssl_enabled() else "http"
            event["headers"] = {**headers, "X-Forwarded-Proto": scheme}
            multi = event.get("multiValueHeaders") or {}
            event["multiValueHeaders"] = {**multi, "X-Forwarded-Proto": [scheme]}
        return event

    apigateway_v1._build_lambda_event_v1 = _build_lambda_event_v1


# 3. CloudFormation refuses an AWS::CloudWatch::Alarm with `Metrics` (metric math, Metrics
#    Insights): "Properties.Metrics (metric math) is not supported", and the stack rolls back. AWS
#    creates such alarms. Here the alarm is created with its `Metrics` as given and no single
#    metric; the engine evaluates no metric math, so it stays INSUFFICIENT_DATA (no emulator has
#    the metrics anyway).
def _accept_metric_math_alarms() -> None:
    record = provisioners._cw_metric_alarm_record

    def _cw_metric_alarm_record(name: str, props: dict[str, Any]) -> dict[str, Any]:
        metrics = props.get("Metrics")
        if not metrics:
            return record(name, props)
        single = {
            **{key: value for key, value in props.items() if key != "Metrics"},
            "MetricName": "-",
            "Namespace": "-",
        }
        alarm = record(name, single)
        for key in (
            "MetricName",
            "Namespace",
            "Statistic",
            "ExtendedStatistic",
            "Dimensions",
            "Unit",
            "Period",
        ):
            alarm.pop(key, None)
        alarm["Metrics"] = copy.deepcopy(metrics)
        return alarm

    provisioners._cw_metric_alarm_record = _cw_metric_alarm_record


PATCHES: tuple[Callable[[], None], ...] = (
    _report_exception_class,
    _add_domain_name,
    _accept_metric_math_alarms,
)


def install() -> None:
    """Apply every patch (once per process)."""
    global _installed  # noqa: PLW0603 - one engine per process
    with _lock:
        if _installed:
            return
        for patch in PATCHES:
            patch()
        _installed = True
