#!/usr/bin/env python3
"""CDK entry point: `cdk synth -c stage=dev|prod|local` (cdk.json runs this file).

Env-agnostic and offline: no account, region, credentials or network are read here.
"""

from aws_cdk import App

from infra.app import build, config_of

app = App()
build(app, config_of(app))
app.synth()
