"""The Powertools Logger, Metrics and Tracer every handler shares (configured by POWERTOOLS_* env).

These hold no AWS clients, so building them at import time is safe; the service name and metric
namespace come from POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
