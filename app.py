#!/usr/bin/env python3
"""CDK entry point: `cdk synth -c stage=dev|prod|local` (cdk.json runs this file).

Env-agnostic and offline: no account, region, credentials or network are read here. `build` is
what the lab synthesizes too (`[tool.retrysafe] app` in pyproject.toml).
"""

from aws_cdk import App

from infra.app import build as build_stages
from infra.app import config_of
from reliability.cdk.service import ServiceStacks


def build(app: App) -> ServiceStacks:
    """The stage's stacks (cdk.json's context and `-c stage=`) onto `app`."""
    return build_stages(app, config_of(app))


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
