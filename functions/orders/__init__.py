"""The sample domain: an order workflow that stays correct under AWS retries.

`contract` is the public API, `domain` the plain-Python model and services, `ports` the
Protocols they depend on, `adapters` the AWS implementations, `runtime` the composition root and
`handlers` the thin Lambda entry points.
"""
