"""The offline local cloud: moto as the engine, plus the glue it lacks (docs/local-cloud.md).

    from localcloud import LocalCloud, Config
    with LocalCloud(Config.from_env(port=0)) as cloud: ...

`LocalCloud` (and with it moto) is imported on first use, so `python -m localcloud down|status`
starts fast. Clients find, drive and start a local cloud through `ops.local` (its outputs file,
control routes and process), which imports nothing of this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localcloud.config import Config

if TYPE_CHECKING:
    from localcloud.cloud import LocalCloud

__all__ = ["Config", "LocalCloud"]


def __getattr__(name: str) -> Any:
    if name == "LocalCloud":
        from localcloud.cloud import LocalCloud  # noqa: PLC0415 - moto loads only when a cloud is made

        return LocalCloud
    raise AttributeError(f"module 'localcloud' has no attribute {name!r}")
