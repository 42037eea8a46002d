"""The app stack: functions and their contract, event sources, IAM scope, alarms, outputs."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from emulator.templates import exports_of, function_specs
from infra.config import (
    DEDUP_WINDOWS,
    FENCE_WINDOWS,
    PROVIDER_KEY_LIFETIME_HOURS,
    outlived,
)
from infra.sizing import FUNCTIONS, pascal
from orders import items, workflow
from reliability.cdk.function import POWERTOOLS_LAYER_PARAMETER

COMMON_ENV = {
    "SERVICE_NAME",
    "STAGE",
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_LOG_LEVEL",
    "IDEMPOTENCY_TTL_SECONDS",
    "FENCE_TTL_SECONDS",
    "DEDUP_TTL_SECONDS",
    "PROVIDER_KEY_LIFETIME_SECONDS",
}
TABLE_VARS = {
    "inventory": "INVENTORY_TABLE",
    "payments": "PAYMENTS_TABLE",
    "ledger": "LEDGER_TABLE",
    "notifications": "NOTIFICATIONS_TABLE",
    "aggregates": "AGGREGATES_TABLE",
    "orders": "ORDERS_TABLE",
}


def _step_env(step: workflow.Step) -> set[str]:
    """A fenced step: the fence table, its ports (orders only where declared), which step it runs."""
    env = {"FENCE_TABLE", "STEP_NAME"} | {TABLE_VARS[p] for p in step.ports if p in TABLE_VARS}
    if workflow.EVENTS in step.ports:
        env |= {workflow.queue_env(consumer.name) for consumer in workflow.CONSUMERS}
    return env


def _consumer_env(consumer: workflow.Consumer) -> set[str]:
    """A consumer: dedup, its tables, the orders table (read: each event is verified against its
    order), its DLQ, which consumer it runs."""
    tables = {TABLE_VARS[t] for t in consumer.tables}
    return {
        "IDEMPOTENCY_TABLE",
        "ORDERS_TABLE",
        *tables,
        workflow.queue_env(f"{consumer.name}-dlq"),
        "CONSUMER_NAME",
    }


# Each function's environment (docs/architecture.md, "Functions"): the steps' and consumers'
# rows follow from their entries in orders.workflow.
CONTRACT_ENV = {
    "api": {
        "IDEMPOTENCY_TABLE",
        "ORDERS_TABLE",
        "INVENTORY_TABLE",
        "PAYMENTS_TABLE",
        "LEDGER_TABLE",  # GET /orders/{id}: RecordLedger's record is on its ledger entry
        "FENCE_TABLE",
        "ORDERS_QUEUE_URL",
    },
    "worker": {
        "ORDERS_TABLE",
        "STATE_MACHINE_ARN",
        "ORDERS_DLQ_URL",
        "THROTTLE_BACKOFF_SECONDS",
        "WORKFLOW_TYPE",
        "MAX_RECEIVE_COUNT",
    },
    **{workflow.function_name(step.name): _step_env(step) for step in workflow.STEPS},
    **{consumer.name: _consumer_env(consumer) for consumer in workflow.CONSUMERS},
    "sweep-accepted": {"ORDERS_TABLE", "ORDERS_QUEUE_URL", "STRANDED_AFTER_SECONDS"},
}
CONTRACT_HANDLERS = {
    "api": "orders.handlers.api.handler",
    "worker": "orders.handlers.worker.handler",
    **{workflow.function_name(step.name): "orders.handlers.steps.handler" for step in workflow.STEPS},
    **{consumer.name: "orders.handlers.consumers.handler" for consumer in workflow.CONSUMERS},
    "sweep-accepted": "orders.handlers.sweep.handler",
}
READ_ONLY = {
    "api": {"INVENTORY_TABLE", "PAYMENTS_TABLE", "LEDGER_TABLE", "FENCE_TABLE"},
    **{consumer.name: {"ORDERS_TABLE"} for consumer in workflow.CONSUMERS},
    "sweep-accepted": {"ORDERS_TABLE"},
}


def test_the_api_reads_every_table_a_step_record_is_on():
    # GET /orders/{id} reads each step's record where orders.items.record_at puts it
    assert {workflow.table_env(table) for table in items.record_tables()} <= READ_ONLY["api"]


DYNAMODB_WRITES = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
}


def _functions(template: Template) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["FunctionName"].removeprefix("retrysafe-dev-"): {**r, "LogicalId": logical_id}
        for logical_id, r in template.find_resources("AWS::Lambda::Function").items()
    }


def test_the_functions_are_the_contract(dev_app: Template) -> None:
    functions = _functions(dev_app)
    assert set(functions) == set(CONTRACT_HANDLERS)
    for name, fn in functions.items():
        props = fn["Properties"]
        assert props["Handler"] == CONTRACT_HANDLERS[name]
        assert props["Runtime"] == "python3.14"
        assert props["Architectures"] == ["arm64"]
        assert props["Timeout"] == FUNCTIONS[name].timeout_seconds
        assert props["MemorySize"] == FUNCTIONS[name].memory_mb
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["LoggingConfig"]["LogFormat"] == "JSON"
        assert props["LoggingConfig"]["LogGroup"]["Ref"].startswith(f"{pascal(name)}Logs")


def test_each_function_logs_to_its_own_group_with_retention(dev_app: Template) -> None:
    for name in CONTRACT_HANDLERS:
        dev_app.has_resource_properties(
            "AWS::Logs::LogGroup",
            {"LogGroupName": f"/aws/lambda/retrysafe-dev-{name}", "RetentionInDays": 30},
        )


def test_powertools_layer_is_resolved_at_deploy_time(dev_app_json: dict[str, Any]) -> None:
    (param_id,) = [
        k for k, p in dev_app_json["Parameters"].items() if p.get("Default") == POWERTOOLS_LAYER_PARAMETER
    ]
    assert dev_app_json["Parameters"][param_id]["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert POWERTOOLS_LAYER_PARAMETER == "/aws/service/powertools/python/arm64/python3.14/latest"
    for fn in dev_app_json["Resources"].values():
        if fn["Type"] == "AWS::Lambda::Function":
            assert fn["Properties"]["Layers"] == [{"Ref": param_id}]


def test_environment_is_exactly_the_contract(
    dev_app_json: dict[str, Any], dev_data_json: dict[str, Any]
) -> None:
    specs = function_specs(dev_app_json, exports=exports_of(dev_data_json))
    by_name = {spec["FunctionName"].removeprefix("retrysafe-dev-"): spec for spec in specs}
    for name, expected in CONTRACT_ENV.items():
        env = by_name[name]["Environment"]
        assert set(env) == COMMON_ENV | expected, name
        assert env["STAGE"] == "dev"
        assert env["SERVICE_NAME"] == env["POWERTOOLS_SERVICE_NAME"] == env["POWERTOOLS_METRICS_NAMESPACE"]
        # Every function reads the lifetimes from here; each outlives the windows it must
        assert int(env["FENCE_TTL_SECONDS"]) >= outlived(FENCE_WINDOWS) == 32 * 86400
        assert int(env["DEDUP_TTL_SECONDS"]) >= outlived(DEDUP_WINDOWS) == 32 * 86400
        assert env["IDEMPOTENCY_TTL_SECONDS"] == str(24 * 3600)
        assert env["PROVIDER_KEY_LIFETIME_SECONDS"] == str(PROVIDER_KEY_LIFETIME_HOURS * 3600)
        for var in expected:
            if var.endswith("_TABLE"):
                assert env[var].startswith("retrysafe-dev-"), (name, var, env[var])
    assert by_name["api"]["Environment"]["FENCE_TABLE"] == "retrysafe-dev-fences"
    assert by_name["analytics"]["Environment"]["AGGREGATES_TABLE"] == "retrysafe-dev-daily-aggregates"
    # A spot check of the derived rows against the contract above
    assert CONTRACT_ENV["reserve-inventory"] == {"FENCE_TABLE", "INVENTORY_TABLE", "STEP_NAME"}
    # Only the steps that set the order's status declare (and so get) the orders table.
    assert (
        {
            step.name
            for step in workflow.STEPS
            if "ORDERS_TABLE" in by_name[workflow.function_name(step.name)]["Environment"]
        }
        == {step.name for step in workflow.STEPS if "orders" in step.ports}
        == {"MarkCompleted", "MarkFailed"}
    )
    assert by_name["reserve-inventory"]["Environment"]["STEP_NAME"] == "ReserveInventory"
    assert by_name["notify"]["Environment"]["CONSUMER_NAME"] == "notify"


@pytest.mark.parametrize("name", ["worker", *(consumer.name for consumer in workflow.CONSUMERS)])
def test_sqs_event_sources_report_batch_item_failures(dev_app: Template, name: str) -> None:
    fn = _functions(dev_app)[name]
    dev_app.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": fn["LogicalId"]},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 10,
        },
    )


def test_every_event_source_reports_batch_item_failures(dev_app: Template) -> None:
    mappings = dev_app.find_resources("AWS::Lambda::EventSourceMapping")
    assert len(mappings) == 1 + len(workflow.CONSUMERS)
    for mapping in mappings.values():
        assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def _statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role logical id, statement) for every identity policy statement in the template."""
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for role in resource["Properties"]["Roles"]:
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                found.append((role["Ref"], statement))
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_wildcard_actions_and_data_actions_name_their_resources(dev_app_json: dict[str, Any]) -> None:
    statements = _statements(dev_app_json)
    assert statements
    for _, statement in statements:
        actions = _as_list(statement["Action"])
        assert all("*" not in action for action in actions), statement
        if any(a.split(":")[0] in {"dynamodb", "sqs", "states", "lambda"} for a in actions):
            assert all(resource != "*" for resource in _as_list(statement["Resource"])), statement


def test_each_role_reaches_exactly_its_tables_and_queues(
    dev_app_json: dict[str, Any], dev_data_json: dict[str, Any]
) -> None:
    exports = exports_of(dev_data_json, queue_url=lambda name: name)
    arn_exports = {
        output["Export"]["Name"]: output["Value"]["Fn::GetAtt"][0]
        for output in dev_data_json["Outputs"].values()
        if "Export" in output and "Fn::GetAtt" in output["Value"]
    }
    data_names = {
        logical_id: r["Properties"].get("TableName") or r["Properties"].get("QueueName")
        for logical_id, r in dev_data_json["Resources"].items()
    }
    functions = _functions(Template.from_json(dev_app_json))
    role_of = {fn["Properties"]["Role"]["Fn::GetAtt"][0]: name for name, fn in functions.items()}
    reached: dict[str, dict[str, set[str]]] = {
        name: {"read": set(), "write": set(), "send": set()} for name in functions
    }
    for role, statement in _statements(dev_app_json):
        if role not in role_of:
            continue
        actions = set(_as_list(statement["Action"]))
        for resource in _as_list(statement["Resource"]):
            if not isinstance(resource, dict) or "Fn::ImportValue" not in resource:
                continue
            name = data_names[arn_exports[resource["Fn::ImportValue"]]].removeprefix("retrysafe-dev-")
            kind = (
                "send" if "sqs:SendMessage" in actions else "write" if actions & DYNAMODB_WRITES else "read"
            )
            if "sqs:ReceiveMessage" in actions:
                kind = "consume"
                reached[role_of[role]].setdefault(kind, set())
            reached[role_of[role]][kind].add(name)
    assert exports  # the data stack exports what the app stack imports
    env_name = {
        "idempotency": "IDEMPOTENCY_TABLE",
        "fences": "FENCE_TABLE",
        "orders": "ORDERS_TABLE",
        "inventory": "INVENTORY_TABLE",
        "payments": "PAYMENTS_TABLE",
        "ledger": "LEDGER_TABLE",
        "notifications": "NOTIFICATIONS_TABLE",
        "daily-aggregates": "AGGREGATES_TABLE",
    }
    for name, access in reached.items():
        tables = {v for k, v in env_name.items() if k in access["write"] | access["read"]}
        expected_tables = {v for v in CONTRACT_ENV[name] if v.endswith("_TABLE")}
        assert tables == expected_tables, name
        read_only = {v for k, v in env_name.items() if k in access["read"] - access["write"]}
        assert read_only == READ_ONLY.get(name, set()), name
        sends = {workflow.queue_env(q) for q in access["send"]}
        assert sends == {v for v in CONTRACT_ENV[name] if v.endswith("_URL")}, name


def test_worker_may_start_and_describe_only_the_order_workflow(dev_app_json: dict[str, Any]) -> None:
    functions = _functions(Template.from_json(dev_app_json))
    worker_role = functions["worker"]["Properties"]["Role"]["Fn::GetAtt"][0]
    states = [
        s for role, s in _statements(dev_app_json) if role == worker_role and "states" in str(s["Action"])
    ]
    assert {a for s in states for a in _as_list(s["Action"])} == {
        "states:StartExecution",
        "states:DescribeExecution",
    }
    assert "retrysafe-dev-order-workflow:*" in str(states)


@pytest.mark.parametrize("name", list(CONTRACT_HANDLERS))
def test_each_function_has_error_and_throttle_alarms(dev_app: Template, name: str) -> None:
    for metric in ("Errors", "Throttles"):
        dev_app.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "AlarmName": f"retrysafe-dev-{name}-{metric.lower()}",
                "MetricName": metric,
                "Namespace": "AWS/Lambda",
                "Threshold": 1,
                "Dimensions": [
                    {"Name": "FunctionName", "Value": {"Ref": _functions(dev_app)[name]["LogicalId"]}}
                ],
            },
        )


def test_outputs_are_the_contract(dev_app: Template) -> None:
    expected = {"ApiUrl", "StateMachineArn"} | {f"{pascal(name)}FunctionName" for name in CONTRACT_HANDLERS}
    assert set(dev_app.find_outputs("*")) == expected
