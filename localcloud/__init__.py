"""The offline local cloud: moto as the engine, plus the glue it lacks (docs/local-cloud.md).

    from localcloud import LocalCloud, Config, outputs
    with LocalCloud(Config.from_env(port=0)) as cloud: ...
    outputs.load(".localcloud/outputs.json").api_url

`LocalCloud` (and with it moto) is imported on first use, so clients that only read the outputs,
and `python -m localcloud down|status`, start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localcloud import control, outputs
from localcloud.config import Config
from localcloud.outputs import Outputs

if TYPE_CHECKING:
    from localcloud.cloud import LocalCloud

__all__ = ["Config", "LocalCloud", "Outputs", "control", "outputs"]


def __getattr__(name: str) -> Any:
    if name == "LocalCloud":
        from localcloud.cloud import LocalCloud  # noqa: PLC0415 - moto loads only when a cloud is made

        return LocalCloud
    raise AttributeError(f"module 'localcloud' has no attribute {name!r}")
