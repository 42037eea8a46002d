"""Compose the application: both stacks of one stage, tagged, with cdk-nag attached."""

from __future__ import annotations

from aws_cdk import App, Tags

from infra.capacity import CapacityPlan, plan, stage_capacity
from infra.config import CONTEXT_KEY, StageConfig, load_config
from infra.stacks.app import AppStack
from infra.stacks.data import DataStack
from reliability.cdk.nag import add_nag_checks


def config_of(app: App) -> StageConfig:
    """The stage config from the app's context (`cdk.json` + `-c stage=...`)."""
    return load_config(app.node.try_get_context(CONTEXT_KEY) or {}, app.node.try_get_context("stage"))


def capacity_of(app: App, config: StageConfig) -> CapacityPlan:
    """The stage's capacity plan (infra/capacity.py) from its `capacity` entry and workflow type."""
    return plan(stage_capacity(app.node.try_get_context(CONTEXT_KEY) or {}, config.stage), config.workflow)


def build(app: App, config: StageConfig) -> tuple[DataStack, AppStack]:
    data = DataStack(app, config.data_stack_name, config=config)
    capacity = capacity_of(app, config)
    compute = AppStack(app, config.app_stack_name, config=config, data=data, capacity=capacity)
    for stack in (data, compute):
        Tags.of(stack).add("service", config.service)
        Tags.of(stack).add("stage", config.stage)
    add_nag_checks(app)
    return data, compute
