"""MiniStack, the LocalStack-compatible engine the LocalStack path runs on in the project's checks.

MiniStack (PyPI `ministack`, MIT) needs no auth token and no Docker, which LocalStack now does. It
runs from a virtualenv of its own, `.venv-ministack` (requirements-ministack.txt), so the two sides
of this package never import each other's dependencies:
- the engine side runs in that virtualenv: `python -m localstack_engine` applies `patches` (each
  one a way MiniStack differs from AWS that the service meets) and serves MiniStack;
- the project side runs in `.venv` with the standard library only: `process` starts and stops the
  engine on 127.0.0.1 (`make ministack`), `walk` takes the LocalStack path docs/deploying.md describes on it
  from end to end (`make e2e-localstack`).
"""
