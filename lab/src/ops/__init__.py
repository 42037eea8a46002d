"""Operator and client tools: invariant checks, catalog seed, invoke, redrive, the demo."""
