"""The patched engine: `.venv-ministack/bin/python -m localstack_engine` (see `process`).

MiniStack reads `BIND_HOST` and `GATEWAY_PORT` from the environment (it has no flags for them).
"""

from __future__ import annotations

from ministack.app import main

from localstack_engine import patches

patches.install()
main()
