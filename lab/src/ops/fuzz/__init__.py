"""The API's own fuzz suite: hypothesis draws hostile requests, an oracle built from the published
OpenAPI description judges every answer, and the stores prove rejected requests changed nothing
and accepted entities read back. `make fuzz` runs it over HTTP against a local cloud (thousands of
requests, figures in results/ops/fuzz.md); tests/fuzz runs a few hundred in-process in `make test`.
"""
