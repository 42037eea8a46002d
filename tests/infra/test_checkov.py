"""checkov: every finding on every stage is fixed or acknowledged on its one resource with a
reason, and a stage with `customer_managed_keys` encrypts its data and logs with its own key."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs

from emulator.synth import cdk_context, templates
from infra.config import CONTEXT_KEY, load_config
from reliability.cdk.nag import CHECKOV_METADATA, acknowledge_checkov
from tests.infra.conftest import SERVICE, STAGES, checkov_skips

CHECK_ID = re.compile(r"^CKV2?_AWS_\d+$")


def _uses_customer_key(stage: str) -> bool:
    return load_config(cdk_context(stage)[CONTEXT_KEY], stage).customer_managed_keys


@pytest.mark.parametrize("stage", STAGES)
def test_every_acknowledgment_names_one_check_on_one_resource_with_a_reason(stage: str) -> None:
    acknowledged = checkov_skips(stage)
    assert acknowledged, "the stage acknowledges nothing: is the metadata still written?"
    for (check, resource), reason in acknowledged.items():
        assert CHECK_ID.match(check), (check, resource)
        assert len(reason.strip()) >= 40, (check, resource, reason)


@pytest.mark.parametrize("stage", STAGES)
def test_the_customer_key_checks_are_acknowledged_only_where_the_stage_keeps_aws_keys(stage: str) -> None:
    key_checks = {"CKV_AWS_119", "CKV_AWS_27", "CKV_AWS_158", "CKV_AWS_173"}
    acknowledged = {check for check, _ in checkov_skips(stage)} & key_checks
    assert acknowledged == (set() if _uses_customer_key(stage) else key_checks), stage


def _resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == resource_type}


def test_a_stage_with_customer_managed_keys_encrypts_everything_with_its_one_key() -> None:
    # Given the prod stage, which sets customer_managed_keys
    assert _uses_customer_key("prod")
    data, app = (templates("prod")[f"{SERVICE}-prod-{kind}"] for kind in ("data", "app"))
    # Then its data stack holds one key, rotated, kept with the retained data
    ((key_id, key),) = _resources(data, "AWS::KMS::Key").items()
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
    # and every table and queue is encrypted with it
    tables = _resources(data, "AWS::DynamoDB::Table").values()
    assert len(tables) == 8
    for table in tables:
        assert table["Properties"]["SSESpecification"] == {
            "KMSMasterKeyId": key_arn,
            "SSEEnabled": True,
            "SSEType": "KMS",
        }
    queues = _resources(data, "AWS::SQS::Queue").values()
    assert len(queues) == 6
    for queue in queues:
        assert queue["Properties"]["KmsMasterKeyId"] == key_arn
        assert "SqsManagedSseEnabled" not in queue["Properties"]
    # and the app stack's log groups and function environments use the same key, by its export
    (export,) = [o["Export"]["Name"] for o in data["Outputs"].values() if o["Value"] == key_arn]
    imported = {"Fn::ImportValue": export}
    log_groups = _resources(app, "AWS::Logs::LogGroup").values()
    functions = _resources(app, "AWS::Lambda::Function").values()
    assert len(log_groups) == len(functions) + 2  # + the state machine's and the API's access logs
    for log_group in log_groups:
        assert log_group["Properties"]["KmsKeyId"] == imported
    for function in functions:
        assert function["Properties"]["KmsKeyArn"] == imported
    # And the key policy lets CloudWatch Logs use it for this stage's log groups only
    (logs,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if "Service" in s.get("Principal", {})]
    assert _literal(logs["Principal"]["Service"]) == "logs.${}.amazonaws.com"
    log_group_arns = _literal(logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"])
    assert log_group_arns.endswith(f":log-group:/aws/*/{SERVICE}-prod-*")


def _literal(value: Any) -> str:
    """A string or Fn::Join with each reference written `${}`."""
    if isinstance(value, str):
        return value
    return "".join(part if isinstance(part, str) else "${}" for part in value["Fn::Join"][1])


def test_each_function_role_may_decrypt_with_the_stage_key() -> None:
    app = templates("prod")[f"{SERVICE}-prod-app"]
    roles = {
        f["Properties"]["Role"]["Fn::GetAtt"][0] for f in _resources(app, "AWS::Lambda::Function").values()
    }
    decrypting = set()
    for policy in _resources(app, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "kms:Decrypt" in actions and "Fn::ImportValue" in statement["Resource"]:
                decrypting |= {role["Ref"] for role in policy["Properties"]["Roles"]}
    assert roles <= decrypting


@pytest.mark.parametrize("stage", [s for s in STAGES if not _uses_customer_key(s)])
def test_a_stage_without_customer_managed_keys_has_no_key(stage: str) -> None:
    for template in templates(stage).values():
        assert not _resources(template, "AWS::KMS::Key")
        assert "KmsKeyId" not in str(template)


def test_acknowledge_checkov_writes_one_skip_per_check_on_the_resource_and_refuses_bad_ones() -> None:
    stack = Stack(App(), "Scanned")
    queue = sqs.Queue(stack, "Queue")
    reason = "a reason long enough for a reviewer to check"
    acknowledge_checkov(queue, "CKV_AWS_27", reason)
    acknowledge_checkov(queue.node.default_child, "CKV2_AWS_73", reason)  # type: ignore[arg-type]
    resource = stack.resolve(queue.node.default_child.get_metadata(CHECKOV_METADATA))  # type: ignore[union-attr]
    assert resource == {
        "skip": [{"id": "CKV_AWS_27", "comment": reason}, {"id": "CKV2_AWS_73", "comment": reason}]
    }
    with pytest.raises(ValueError, match="already acknowledged"):
        acknowledge_checkov(queue, "CKV_AWS_27", reason)
    with pytest.raises(ValueError, match="say why"):
        acknowledge_checkov(queue, "CKV_AWS_26", "because")
    with pytest.raises(ValueError, match="not a checkov AWS check id"):
        acknowledge_checkov(queue, "AwsSolutions-SQS3", reason)
    with pytest.raises(TypeError, match="not one CloudFormation resource"):
        acknowledge_checkov(stack, "CKV_AWS_27", reason)
