"""The REST API built from an OpenAPI document (reliability.cdk.api.OpenApiRestApi)."""

from __future__ import annotations

import copy

import pytest
import wallet_service
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from reliability.cdk.api import OpenApiRestApi
from reliability.cdk.config import ApiAuth, ApiThrottle

pytestmark = pytest.mark.slow


def test_routes_that_take_the_same_body_share_one_model() -> None:
    # Regression: each route added its own model, so two routes with one request body clashed on
    # the construct id (and API Gateway's model name)
    document = copy.deepcopy(wallet_service.OPENAPI)
    document["paths"]["/transfers/{transfer_id}/copy"] = {"post": document["paths"]["/transfers"]["post"]}
    stack = Stack(App(), "SharedModel")
    handler = lambda_.Function.from_function_arn(
        stack, "Handler", "arn:aws:lambda:us-east-1:123456789012:function:api"
    )
    OpenApiRestApi(
        stack,
        "Api",
        document=document,
        api_name="a",
        description="an API",
        no_cache_reason="No cache: every request reaches the function.",
        stage_name="s",
        handler=handler,
        auth=ApiAuth.NONE,
        throttle=ApiThrottle(rate=10, burst=20),
        retain_logs=False,
        log_key=None,
    )
    template = Template.from_stack(stack)
    (model_id,) = template.find_resources("AWS::ApiGateway::Model")
    posts = [
        m["Properties"]
        for m in template.find_resources("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] == "POST"
    ]
    assert len(posts) == 2
    assert all(props["RequestModels"] == {"application/json": {"Ref": model_id}} for props in posts)
