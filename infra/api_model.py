"""The draft-4 model of a request schema: the library's (`reliability.cdk.api_model`)."""

from __future__ import annotations

from reliability.cdk.api_model import JSON_SCHEMA_DRAFT4, model_schema

__all__ = ["JSON_SCHEMA_DRAFT4", "model_schema"]
