"""A service's whole CDK assembly from its declaration (reliability.cdk.service.ServiceStacks): a
service other than any the library was written with synthesizes cleanly under cdk-nag, and every
resource follows from its entries: tables, queues, one function per step and consumer with its
grants and entry, the provider cap, the state machine, the API from the document."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import wallet_service
from aws_cdk import App
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from reliability.cdk.declared import ManifestError, load_service
from reliability.cdk.service import FEATURE_FLAGS, ServiceStacks
from reliability.declaration import FENCES, Service

pytestmark = pytest.mark.slow


def _stacks(root: Path, service: Service | None = None, stage: str = "dev") -> tuple[App, ServiceStacks]:
    declaration = wallet_service.write(root)
    app = App(outdir=str(root / "cdk.out"), context=FEATURE_FLAGS)
    stacks = ServiceStacks(
        app,
        service=service or load_service(declaration),
        openapi=wallet_service.OPENAPI,
        code_root=root,
        handler_package=wallet_service.HANDLER_PACKAGE,
        context=wallet_service.CONTEXT,
        stage=stage,
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )
    return app, stacks


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    app, stacks = _stacks(tmp_path_factory.mktemp("wallet"))
    # cdk-nag runs in the synth: an unacknowledged finding would raise here
    assembly = app.synth()
    return {
        kind: assembly.get_stack_by_name(stack.stack_name).template
        for kind, stack in (("data", stacks.data), ("app", stacks.app))
    }


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in template["Resources"].items() if v["Type"] == kind}


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {props["FunctionName"]: props for props in _of_type(template, "AWS::Lambda::Function").values()}


def test_the_stacks_are_named_after_the_service_and_stage(templates: dict[str, dict[str, Any]]) -> None:
    assert templates["data"]["Description"] == "wallet dev: tables and queues (stateful)"
    assert templates["app"]["Description"] == "wallet dev: functions, transfer workflow, API, alarms"


def test_every_declared_table_and_the_record_tables_exist(templates: dict[str, dict[str, Any]]) -> None:
    tables = {props["TableName"] for props in _of_type(templates["data"], "AWS::DynamoDB::Table").values()}
    assert tables == {
        f"wallet-dev-{t}" for t in ("idempotency", FENCES, "transfers", "balances", "payouts", "audits")
    }


def test_the_workers_queue_and_each_consumers_have_a_dlq(templates: dict[str, dict[str, Any]]) -> None:
    queues = {props["QueueName"] for props in _of_type(templates["data"], "AWS::SQS::Queue").values()}
    assert queues == {
        "wallet-dev-transfers",
        "wallet-dev-transfers-dlq",
        "wallet-dev-audit",
        "wallet-dev-audit-dlq",
    }


def test_one_function_per_step_and_consumer_runs_its_kinds_handler_told_its_entry(
    templates: dict[str, dict[str, Any]],
) -> None:
    functions = _functions(templates["app"])
    steps = {
        "debit": "Debit",
        "pay-out": "PayOut",
        "publish": "Publish",
        "mark-done": "MarkDone",
        "refund": "Refund",
        "mark-failed": "MarkFailed",
    }
    assert set(functions) == {f"wallet-dev-{n}" for n in (*steps, "audit", "api", "worker", "sweep-accepted")}
    for name, state in steps.items():
        props = functions[f"wallet-dev-{name}"]
        assert props["Handler"] == "transfers.handlers.steps.handler"
        assert props["Environment"]["Variables"]["STEP_NAME"] == state
    audit = functions["wallet-dev-audit"]
    assert audit["Handler"] == "transfers.handlers.consumers.handler"
    assert audit["Environment"]["Variables"]["CONSUMER_NAME"] == "audit"
    assert functions["wallet-dev-api"]["Description"] == (
        "POST /transfers and GET /transfers/{transfer_id}: HTTP idempotency, enqueue"
    )


def test_only_the_worker_and_the_provider_step_get_reserved_concurrency(
    templates: dict[str, dict[str, Any]],
) -> None:
    reserved = {
        name.removeprefix("wallet-dev-")
        for name, props in _functions(templates["app"]).items()
        if "ReservedConcurrentExecutions" in props
    }
    assert reserved == {"worker", "pay-out"}


def test_each_function_is_named_only_the_tables_it_may_touch(templates: dict[str, dict[str, Any]]) -> None:
    functions = _functions(templates["app"])

    def env(name: str) -> set[str]:
        return {
            k
            for k in functions[f"wallet-dev-{name}"]["Environment"]["Variables"]
            if k.endswith(("_TABLE", "_URL"))
        }

    assert env("debit") == {"FENCE_TABLE", "BALANCES_TABLE"}
    assert env("publish") == {"FENCE_TABLE", "AUDIT_QUEUE_URL"}
    assert env("mark-done") == {"FENCE_TABLE", "TRANSFERS_TABLE"}
    assert env("audit") == {"IDEMPOTENCY_TABLE", "AUDITS_TABLE", "TRANSFERS_TABLE", "AUDIT_DLQ_URL"}
    assert env("worker") == {"TRANSFERS_TABLE", "TRANSFERS_DLQ_URL"}
    assert env("api") == {
        "IDEMPOTENCY_TABLE",
        "TRANSFERS_TABLE",
        "BALANCES_TABLE",
        "PAYOUTS_TABLE",
        "FENCE_TABLE",
        "TRANSFERS_QUEUE_URL",
    }


def test_the_alarms_name_the_log_lines_and_key_the_operator_finds_a_transfer_by(
    templates: dict[str, dict[str, Any]],
) -> None:
    alarms = {
        props["AlarmName"]: props for props in _of_type(templates["app"], "AWS::CloudWatch::Alarm").values()
    }
    stranded = next(a for name, a in alarms.items() if name.endswith("-stranded-transfers"))
    assert stranded["MetricName"] == "StrandedRun"
    # the log lines carry the entity's id as `entity_id`, whatever the entity is (a transfer here)
    assert "the StrandedRun log line's entity_id" in stranded["AlarmDescription"]
    stale = next(a for name, a in alarms.items() if name.endswith("stale-completion"))
    assert "the FenceStale log line's entity_id" in stale["AlarmDescription"]


def test_the_workflow_runs_the_declared_steps(templates: dict[str, dict[str, Any]]) -> None:
    (machine,) = _of_type(templates["app"], "AWS::StepFunctions::StateMachine").values()
    assert machine["StateMachineName"] == "wallet-dev-transfer-workflow"
    definition = str(machine["DefinitionString"])
    for state in ("Debit", "PayOut", "Publish", "MarkDone", "Refund", "MarkFailed", "InsufficientFunds"):
        assert state in definition


def test_the_api_has_each_documented_operation_and_its_body_model(
    templates: dict[str, dict[str, Any]],
) -> None:
    methods = _of_type(templates["app"], "AWS::ApiGateway::Method").values()
    assert sorted(m["HttpMethod"] for m in methods if m["HttpMethod"] != "ANY") == ["GET", "POST"]
    (model,) = _of_type(templates["app"], "AWS::ApiGateway::Model").values()
    assert model["Name"] == "CreateTransfer"
    assert model["Schema"]["properties"]["amount"] == {"type": "number", "multipleOf": 1, "minimum": 1}


def test_an_inconsistent_declaration_fails_before_any_stack_is_built(tmp_path: Path) -> None:
    # Given a declaration whose step writes items of a table it has no port (no grant) for
    service = load_service(wallet_service.write(tmp_path / "declared"))
    debit = dataclasses.replace(service.steps[0], ports=("payouts",))
    broken = dataclasses.replace(service, steps=(debit, *service.steps[1:]))
    # Then the assembly refuses it, naming the step and the table
    with pytest.raises(ManifestError, match=r"step Debit: writes items of \['balances'\]"):
        _stacks(tmp_path / "app", broken)


def test_a_physical_name_for_an_undeclared_table_is_refused(tmp_path: Path) -> None:
    declaration = wallet_service.write(tmp_path)
    with pytest.raises(ValueError, match="undeclared tables"):
        ServiceStacks(
            App(outdir=str(tmp_path / "cdk.out"), context=FEATURE_FLAGS),
            service=load_service(declaration),
            openapi=wallet_service.OPENAPI,
            code_root=tmp_path,
            handler_package=wallet_service.HANDLER_PACKAGE,
            context=wallet_service.CONTEXT,
            physical_names={"nowhere": "x"},
            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        )


def test_the_stage_and_its_values_come_from_the_apps_context_by_default(tmp_path: Path) -> None:
    # Given an app whose context holds the service's block and picks a stage, as cdk.json and
    # `-c stage=live` do
    declaration = wallet_service.write(tmp_path)
    app = App(
        outdir=str(tmp_path / "cdk.out"),
        context={**FEATURE_FLAGS, "retrysafe": wallet_service.CONTEXT, "stage": "live"},
    )
    stacks = ServiceStacks(
        app,
        service=load_service(declaration),
        openapi=wallet_service.OPENAPI,
        code_root=tmp_path,
        handler_package=wallet_service.HANDLER_PACKAGE,
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )
    # Then that stage is built, with its own key
    app.synth()
    assert stacks.data.stack_name == "wallet-live-data"
    Template.from_stack(stacks.data).resource_count_is("AWS::KMS::Key", 1)


def test_an_app_without_the_feature_flags_is_refused(tmp_path: Path) -> None:
    # Given an app whose context lacks one flag the constructs are written for
    declaration = wallet_service.write(tmp_path)
    flags = {
        k: v
        for k, v in FEATURE_FLAGS.items()
        if k != "@aws-cdk/aws-lambda:createNewPoliciesWithAddToRolePolicy"
    }
    # Then the assembly refuses it, naming the flag (cdk-nag would refuse the X-Ray wildcard)
    with pytest.raises(ValueError, match="createNewPoliciesWithAddToRolePolicy"):
        ServiceStacks(
            App(outdir=str(tmp_path / "cdk.out"), context=flags),
            service=load_service(declaration),
            openapi=wallet_service.OPENAPI,
            code_root=tmp_path,
            handler_package=wallet_service.HANDLER_PACKAGE,
            context=wallet_service.CONTEXT,
        )
