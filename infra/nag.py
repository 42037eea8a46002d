"""cdk-nag AwsSolutions on every synth, and the one way this code acknowledges a finding.

cdk-nag 3 is a CDK validation plugin: `app.synth()` raises (and `cdk synth` exits non-zero)
when any finding is not acknowledged, and writes `validation-report.json` into the cloud
assembly either way. Acknowledgments are CDK's own `Validations.of(construct).acknowledge`;
they cover the construct's subtree, so always pass the narrowest construct (the resource
itself, or the one policy the finding is on).
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

PACK = "AwsSolutions"


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one finding (`IAM5[Resource::*]`, `APIG3`, ...) on one construct, with a reason."""
    if len(reason) < 20:
        raise ValueError(f"say why {rule} does not apply to {construct.node.path}")
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PACK}::{PACK}-{rule}", reason=reason))
