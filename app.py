#!/usr/bin/env python3
"""CDK entry point: `cdk synth -c stage=dev|prod|local` (cdk.json runs this file).

Env-agnostic and offline: no account, region, credentials or network are read here.
"""

from aws_cdk import App

from infra.app import build
from infra.config import CONTEXT_KEY, load_config

app = App()
config = load_config(app.node.try_get_context(CONTEXT_KEY) or {}, app.node.try_get_context("stage"))
build(app, config)
app.synth()
