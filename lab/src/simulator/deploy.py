"""Deploying a synthesized assembly onto moto: what CloudFormation would create for the in-process cloud.

The data stack's tables and queues (with their redrive policies), the app stack's functions (moto
Lambda functions with each function's environment, resolved; the code is a placeholder, as the
handlers run in this process, `simulator.lambdas`) and the state machine whose definition is the
template's, with the function ARNs resolved. `deploy(cloud)` fills the cloud's names: outputs,
queue URLs, function specs, the resolver and the EventBridge schedules.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from emulator.functions import FunctionSpec
from emulator.templates import exports_of, function_specs, resources_of_type, state_machine_definition
from simulator.events import ACCOUNT, REGION
from simulator.rules import scheduled_rules

if TYPE_CHECKING:
    from simulator.cloud import InProcessCloud

_PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "stack",
    "AWS::NoValue": None,
}


class Resolver:
    """Resolves the CloudFormation intrinsics CDK emits, against what was deployed."""

    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}
        self.attrs: dict[tuple[str, str], Any] = {}
        self.exports: dict[str, Any] = {}

    def __call__(self, value: Any) -> Any:  # noqa: PLR0911 - one return per intrinsic
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (name, arg), *_ = value.items()
            if name == "Ref":
                # Resources the in-process cloud does not deploy (the REST API, alarms) resolve
                # to a readable placeholder.
                return _PSEUDO[arg] if arg in _PSEUDO else self.refs.get(arg, f"<{arg}>")
            if name == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attrs[(logical, attribute)]
            if name == "Fn::ImportValue":
                return self.exports[self(arg)]
            if name == "Fn::Join":
                separator, parts = arg
                return separator.join(str(self(p)) for p in parts)
            if name == "Fn::Select":
                index, items = arg
                return self(items)[int(index)]
        return {k: self(v) for k, v in value.items()}


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


def deploy(cloud: InProcessCloud) -> None:
    _deploy_data(cloud)
    _deploy_app(cloud)


def _deploy_data(cloud: InProcessCloud) -> None:
    ddb, sqs, r = cloud.dynamodb, cloud.sqs, cloud.resolve
    for logical, resource in resources_of_type(cloud.data_template, "AWS::DynamoDB::Table").items():
        p = resource["Properties"]
        ddb.create_table(
            TableName=p["TableName"],
            KeySchema=p["KeySchema"],
            AttributeDefinitions=p["AttributeDefinitions"],
            BillingMode="PAY_PER_REQUEST",
        )
        r.refs[logical] = p["TableName"]
        r.attrs[(logical, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{p['TableName']}"
    queues = resources_of_type(cloud.data_template, "AWS::SQS::Queue")
    # Dead-letter queues first: the others' redrive policies point at them.
    for logical, resource in sorted(queues.items(), key=lambda kv: "RedrivePolicy" in kv[1]["Properties"]):
        p = resource["Properties"]
        attributes = {k: str(p[k]) for k in ("VisibilityTimeout", "MessageRetentionPeriod") if k in p}
        if "RedrivePolicy" in p:
            attributes["RedrivePolicy"] = json.dumps(r(p["RedrivePolicy"]))
        url = sqs.create_queue(QueueName=p["QueueName"], Attributes=attributes)["QueueUrl"]
        r.refs[logical] = url
        cloud.queue_urls[p["QueueName"]] = url
        r.attrs[(logical, "Arn")] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{p['QueueName']}"
        r.attrs[(logical, "QueueName")] = p["QueueName"]
    _outputs(cloud, cloud.data_template)


def _outputs(cloud: InProcessCloud, template: Mapping[str, Any]) -> None:
    for key, output in template.get("Outputs", {}).items():
        value = cloud.resolve(output["Value"])
        if "Export" in output:
            cloud.resolve.exports[cloud.resolve(output["Export"]["Name"])] = value
        else:
            cloud.outputs[key] = value


def _deploy_app(cloud: InProcessCloud) -> None:
    """Functions with their template environment (emulator.templates.function_specs) and
    the state machine with the template's definition (state_machine_definition)."""
    r = cloud.resolve
    machines = resources_of_type(cloud.app_template, "AWS::StepFunctions::StateMachine")
    machine_arns: dict[str, str] = {}
    for logical, resource in machines.items():
        name = resource["Properties"]["StateMachineName"]
        machine_arns[name] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        r.refs[logical] = machine_arns[name]
    for logical, resource in resources_of_type(cloud.app_template, "AWS::Lambda::Function").items():
        name = resource["Properties"]["FunctionName"]
        r.refs[logical] = name
        r.attrs[(logical, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
    exports = exports_of(cloud.data_template, queue_url=cloud.queue_urls.__getitem__)
    specs = function_specs(
        cloud.app_template, exports=exports, names=machine_arns, queue_url=cloud.queue_urls.__getitem__
    )
    role = cloud.client("iam").create_role(RoleName="in-process", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    lam = cloud.client("lambda")
    code = _dummy_zip()
    for spec in specs:
        environment = {k: str(v) for k, v in spec["Environment"].items()}
        unresolved = [k for k, v in spec["Environment"].items() if not isinstance(v, str | int)]
        if unresolved:
            raise ValueError(f"{spec['FunctionName']}: unresolved environment {unresolved}")
        cloud.functions[spec["FunctionName"]] = FunctionSpec(
            name=spec["FunctionName"],
            arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{spec['FunctionName']}",
            handler=spec["Handler"],
            runtime=spec.get("Runtime") or "python3.12",
            timeout=int(spec.get("Timeout") or 3),
            memory_mb=int(spec.get("MemorySize") or 128),  # Lambda's default when the template sets none
            region=REGION,
            environment=environment,
        )
        lam.create_function(
            FunctionName=spec["FunctionName"],
            Runtime="python3.12",
            Role=role,
            Handler=spec["Handler"],
            Code={"ZipFile": code},
            Timeout=int(spec.get("Timeout") or 3),
            Environment={"Variables": environment},
        )
    function_arns = {name: spec.arn for name, spec in cloud.functions.items()}
    for resource in machines.values():
        p = resource["Properties"]
        cloud.sfn.create_state_machine(
            name=p["StateMachineName"],
            definition=json.dumps(state_machine_definition(cloud.app_template, function_arns)),
            roleArn=role,
            type=p.get("StateMachineType", "STANDARD"),
        )
    _outputs(cloud, cloud.app_template)
    cloud.rules = scheduled_rules(cloud.app_template, cloud.resolve.refs.__getitem__, cloud.clock())
