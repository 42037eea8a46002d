"""The two scanners the constructs answer to, and the one way to acknowledge a finding of each.

cdk-nag AwsSolutions runs on every synth as a CDK validation plugin: `app.synth()` raises (and
`cdk synth` exits non-zero) when any finding is not acknowledged, and writes
`validation-report.json` into the cloud assembly either way. Acknowledgments are CDK's own
`Validations.of(construct).acknowledge`; they cover the construct's subtree, so always pass the
narrowest construct (the resource itself, or the one policy the finding is on).

checkov runs on the synthesized templates (the service's lint). It reads its
acknowledgments from the resource's own CloudFormation `Metadata` (`checkov.skip`), so each one
sits on the one resource it is about, with its reason, in the template a reviewer reads.
"""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Acknowledgment, App, CfnResource, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

PACK = "AwsSolutions"
CHECKOV_METADATA = "checkov"
_CHECKOV_ID = re.compile(r"^CKV2?_AWS_\d+$")
MIN_REASON = 20


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one finding (`IAM5[Resource::*]`, `APIG3`, ...) on one construct, with a reason."""
    if len(reason) < MIN_REASON:
        raise ValueError(f"say why {rule} does not apply to {construct.node.path}")
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PACK}::{PACK}-{rule}", reason=reason))


def acknowledge_checkov(construct: IConstruct, check: str, reason: str) -> None:
    """Acknowledge one checkov check (`CKV_AWS_117`) on one resource (a CfnResource, or an L2
    construct whose default child is one), with a reason."""
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} is not one CloudFormation resource")
    if not _CHECKOV_ID.match(check):
        raise ValueError(f"{check!r} is not a checkov AWS check id")
    if len(reason) < MIN_REASON:
        raise ValueError(f"say why {check} does not apply to {construct.node.path}")
    existing: Any = resource.get_metadata(CHECKOV_METADATA) or {}
    skips = list(existing.get("skip", []))
    if any(skip["id"] == check for skip in skips):
        raise ValueError(f"{check} is already acknowledged on {resource.node.path}")
    resource.add_metadata(CHECKOV_METADATA, {"skip": [*skips, {"id": check, "comment": reason}]})
