"""The service's choice of Lambda runtime and architecture, and the Powertools layer that matches:
the library's defaults (reliability.cdk.function), which the layer build (lab/src/ops/layer.py) reads too.
On the emulators the layer parameter is overridden (`ops.deploy`, LocalStack) or answered by the
local cloud itself."""

from __future__ import annotations

from reliability.cdk.function import ARCHITECTURE, POWERTOOLS_LAYER_PARAMETER, RUNTIME

__all__ = ["ARCHITECTURE", "POWERTOOLS_LAYER_PARAMETER", "RUNTIME"]
