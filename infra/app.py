"""Compose the application: both stacks of one stage, as the library assembles them from the
orders declaration (reliability.cdk.service.ServiceStacks). What is the sample's own: where its
declaration, handlers and OpenAPI document are, its asset (with this checkout's library), its own
capacity limit and one table's physical name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import App

from infra import asset, capacity, manifest
from infra.config import CONTEXT_KEY, StageConfig, load_config
from reliability.cdk.service import ServiceStacks

# The published OpenAPI description (written by `make openapi` from the contract models in
# functions/orders; read as data, never imported): the edge is built from it.
OPENAPI_DOCUMENT = manifest.FUNCTIONS_DIR / "orders" / "openapi.json"
# The analytics consumer's table keeps the physical name it was deployed with.
PHYSICAL_NAMES = {"aggregates": "daily-aggregates"}


def openapi() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(Path(OPENAPI_DOCUMENT).read_text())
    return document


def config_of(app: App) -> StageConfig:
    """The stage config from the app's context (`cdk.json` + `-c stage=...`)."""
    return load_config(app.node.try_get_context(CONTEXT_KEY) or {}, app.node.try_get_context("stage"))


def build(app: App, config: StageConfig) -> ServiceStacks:
    return ServiceStacks(
        app,
        service=manifest.service(),
        openapi=openapi(),
        code_root=manifest.FUNCTIONS_DIR,
        handler_package=manifest.HANDLER_PACKAGE,
        context=app.node.try_get_context(CONTEXT_KEY) or {},
        stage=config.stage,
        code=asset.code(),
        own_limits=capacity.own_limits(),
        physical_names=PHYSICAL_NAMES,
        declaration_source=str(manifest.WORKFLOW_MODULE.relative_to(manifest.FUNCTIONS_DIR.parent)),
    )
