"""The local cloud's moto patches for CloudFormation change sets, parameters and updates (9-13).

The path `cdk deploy` takes; `localcloud.patches` applies these with the others.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from moto.cloudformation import exceptions as cfn_exceptions
from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing
from moto.cloudformation import responses as cfn_responses

logger = logging.getLogger("localcloud.patches")


# 9. moto's ExecuteChangeSet (the path `cdk deploy` takes) is not its CreateStack: a CREATE change
#    set is applied to a stack built from an empty template with no view of the region's exports,
#    so Fn::ImportValue fails ("No export named ..."), the stack's own Outputs and Exports are never
#    registered, and resources are created in template order (a RestApi before its Methods ends
#    REVIEW_IN_PROGRESS: "REST API doesn't contain any methods"). An UPDATE change set leaves the
#    outputs and exports of the old template. Executing a change set here does what moto's
#    CreateStack and UpdateStack do for the same template and parameters.
def _execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
    change_set = self.change_sets[_find_change_set(self, change_set_name, stack_name)]
    stack = self.stacks[change_set.stack_id]
    old_exports = [export.name for export in stack.exports]
    if change_set.change_set_type == "CREATE":
        stack.template = change_set.template
        stack._parse_template()
        stack.parameters = change_set.parameters
        stack.cross_stack_resources = self.exports
        stack.resource_map = stack._create_resource_map()
        stack.output_map = stack._create_output_map()
        self._validate_export_uniqueness(stack)
        stack._add_stack_event("CREATE_IN_PROGRESS", resource_status_reason="User Initiated")
        stack.create_resources()
    else:
        stack.update(change_set.template, parameters=change_set.parameters)
    for name in old_exports:
        self.exports.pop(name, None)
    for export in stack.exports:
        self.exports[export.name] = export
    for key in [key for key, other in self.change_sets.items() if other.stack_id == stack.stack_id]:
        del self.change_sets[key]


# 10. Change sets by name: the CDK CLI names every change set `cdk-deploy-change-set` and finds it by
#     name and stack; moto looks a name up across every stack (DescribeChangeSet and
#     DeleteChangeSet ignore StackName), so deploying the second stack executed the first stack's
#     change set again. An unknown change set is ChangeSetNotFound on AWS (the CLI waits for it
#     after deleting the old one), not ValidationError "Stack with id ... does not exist", and
#     deleting one is not a 500 (UnboundLocalError). And AWS removes a stack's change sets once one
#     of them is executed; moto kept them.
class ChangeSetNotFound(cfn_exceptions.CloudFormationError):
    code = "ChangeSetNotFoundException"  # the model's shape; serialized as AWS's ChangeSetNotFound

    def __init__(self, name: str) -> None:
        super().__init__(f"ChangeSet [{name}] does not exist")


def _find_change_set(backend: Any, name: str, stack_name: str | None) -> str:
    """The change set's key in the backend: its ARN, or that of the one with this name on the stack."""
    if name in backend.change_sets:
        return name
    for key, change_set in backend.change_sets.items():
        on_stack = stack_name in (None, "", change_set.stack_name, change_set.stack_id)
        if change_set.change_set_name == name and on_stack:
            return str(key)
    raise ChangeSetNotFound(name)


def _describe_change_set_response(self: Any) -> Any:
    key = _find_change_set(
        self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName")
    )
    return cfn_responses.ActionResult(self.cloudformation_backend.change_sets[key])


def _delete_change_set_response(self: Any) -> Any:
    with contextlib.suppress(ChangeSetNotFound):  # nothing to delete is not an error
        key = _find_change_set(
            self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName")
        )
        del self.cloudformation_backend.change_sets[key]
    return cfn_responses.EmptyResult()


# 11. The previous value of an SSM-typed stack parameter is the parameter's *name*: AWS keeps it and
#     resolves it again on every update. moto hands back the resolved value for UsePreviousValue
#     (which the CDK CLI sends on every update), then tries to resolve that value as a name and fails
#     with a 500. Its previous values here are the names (given, else the template's default).
def _stack_parameters(self: Any) -> dict[str, Any]:
    resolved = dict(self.resource_map.resolved_parameters)
    given = self.resource_map.input_parameters or {}
    for key, slot in (self.template_dict.get("Parameters") or {}).items():
        if str(slot.get("Type", "")).startswith("AWS::SSM::Parameter::Value"):
            resolved[key] = given.get(key, slot.get("Default"))
    return resolved


# 12. Whether a change set changes anything: moto compares its parameters with the ones given when
#     the stack was created, so an update that passes every previous value (UsePreviousValue, as the
#     CDK CLI does) always "changes" the stack and a redeploy of the same assembly updated every
#     function. AWS compares with the previous values: the same ones are no change, and the CLI
#     reports "(no changes)".
def _has_parameters(self: Any, other_parameters: dict[str, Any]) -> bool:
    previous = _stack_parameters(self)
    return all(previous.get(key) == value for key, value in other_parameters.items())


# 13. An update that modifies a resource whose type moto cannot update (a DynamoDB table, an API
#     Gateway method, ...; even a change of its `aws:cdk:path` metadata) replaces the resource in
#     moto's stack with None, so every later Ref or GetAtt of it fails ("Fn::GetAtt references
#     undefined resource"). Such a resource is kept as it is deployed: its new properties are not
#     applied (AWS would update or replace it). Functions, queues, roles and state machines update.
def _patch_updates_without_support(originals: dict[str, Any]) -> None:
    original = cfn_parsing.parse_and_update_resource
    originals["parse_and_update_resource"] = original

    def parse_and_update_resource(
        logical_id: str, resource_json: Any, resources_map: Any, **kwargs: Any
    ) -> Any:
        updated = original(logical_id, resource_json, resources_map, **kwargs)
        if updated is None:
            logger.info("moto cannot update %s (%s): kept as deployed", logical_id, resource_json.get("Type"))
            return resources_map[logical_id]
        return updated

    cfn_parsing.parse_and_update_resource = parse_and_update_resource  # type: ignore[assignment]


def apply(originals: dict[str, Any]) -> None:
    """Patch moto's CloudFormation; what it replaces goes into `originals` for `restore`."""
    originals["execute_change_set"] = cfn_models.CloudFormationBackend.execute_change_set
    cfn_models.CloudFormationBackend.execute_change_set = _execute_change_set  # type: ignore[method-assign]
    originals["describe_change_set"] = cfn_responses.CloudFormationResponse.describe_change_set
    originals["delete_change_set"] = cfn_responses.CloudFormationResponse.delete_change_set
    cfn_responses.CloudFormationResponse.describe_change_set = _describe_change_set_response  # type: ignore[method-assign]
    cfn_responses.CloudFormationResponse.delete_change_set = _delete_change_set_response  # type: ignore[method-assign]
    originals["stack_parameters"] = cfn_models.Stack.stack_parameters
    cfn_models.Stack.stack_parameters = property(_stack_parameters)  # type: ignore[assignment,method-assign]
    originals["has_parameters"] = cfn_models.Stack.has_parameters
    cfn_models.Stack.has_parameters = _has_parameters  # type: ignore[method-assign]
    _patch_updates_without_support(originals)


def restore(originals: dict[str, Any]) -> None:
    cfn_models.CloudFormationBackend.execute_change_set = originals.pop("execute_change_set")  # type: ignore[method-assign]
    cfn_responses.CloudFormationResponse.describe_change_set = originals.pop("describe_change_set")  # type: ignore[method-assign]
    cfn_responses.CloudFormationResponse.delete_change_set = originals.pop("delete_change_set")  # type: ignore[method-assign]
    cfn_models.Stack.stack_parameters = originals.pop("stack_parameters")  # type: ignore[method-assign]
    cfn_models.Stack.has_parameters = originals.pop("has_parameters")  # type: ignore[method-assign]
    cfn_parsing.parse_and_update_resource = originals.pop("parse_and_update_resource")
