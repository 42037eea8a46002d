"""Every Lambda function of the sample, as the library derives them from its declaration
(`reliability.cdk.sizing`): handler, timeout and memory, written once.

The tests and tools read the sample's functions and queue consumers here.
"""

from __future__ import annotations

from infra import manifest
from reliability.cdk.config import WorkflowType
from reliability.cdk.declared import pascal
from reliability.cdk.sizing import OWN_FUNCTIONS, FunctionSizing, functions_of, queue_consumers, with_workflow

__all__ = ["FUNCTIONS", "QUEUE_CONSUMERS", "FunctionSizing", "functions_for", "pascal"]

manifest.check(set(OWN_FUNCTIONS))
FUNCTIONS: dict[str, FunctionSizing] = functions_of(manifest.service(), manifest.HANDLER_PACKAGE)


def functions_for(workflow: WorkflowType) -> dict[str, FunctionSizing]:
    """Every function of a stage with this workflow type (the worker's timeout follows it)."""
    return with_workflow(FUNCTIONS, workflow)


QUEUE_CONSUMERS: dict[str, str] = queue_consumers(manifest.service())
