"""The Powertools Logger, Metrics and Tracer every handler of a service shares (configured by the
POWERTOOLS_* environment: service name, metric namespace).

They hold no AWS clients, so building them at import time is safe.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
