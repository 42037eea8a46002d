"""The Powertools Logger, Metrics and Tracer every handler shares: the library's
(`reliability.observability`), named here for the lab."""

from reliability.observability import logger, metrics, tracer

__all__ = ["logger", "metrics", "tracer"]
