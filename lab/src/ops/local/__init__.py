"""The local cloud as a target: how a tool finds a running one (`outputs`, the state directory's
`outputs.json`), drives it (`control`, its `/_localcloud/...` routes) and starts or stops one of
its own (`process`, `python -m localcloud` in a subprocess).

Nothing here imports the local cloud itself (nor moto): the operator tools sit below both clouds
(`[tool.importlinter]` in pyproject.toml), and `localcloud` writes the same files these read.
"""
