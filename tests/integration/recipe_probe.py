"""Run inside a copy of the project (tests/integration/test_recipe.py): synthesize it, then report
as JSON what the templates, the chaos maps, the OpenAPI document and an in-process order say about
`step`, `consumer` and the route `/orders/{order_id}<route_suffix>` (a GET).

Usage: python tests/integration/recipe_probe.py <StepName> <consumer-name> <route-suffix>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The copy's own library and lab before the venv's installed ones (as the Makefile's PYTHONPATH)
sys.path[:0] = [
    str(ROOT / "functions"),
    str(ROOT),
    str(ROOT / "lib" / "reliability" / "src"),
    str(ROOT / "lab" / "src"),
]

from chaos.cloud import ChaosCloud  # noqa: E402
from chaos.interleave import HAPPY_PATH  # noqa: E402
from chaos.mutants import MUTANTS  # noqa: E402
from chaos.pairs import pairs_for  # noqa: E402
from chaos.schedules import queue_outputs  # noqa: E402
from emulator.synth import synthesize  # noqa: E402
from emulator.templates import queue_consumers, state_machine_definition, workflow_tasks  # noqa: E402
from ops.invariants import check  # noqa: E402
from simulator.cloud import running_cloud  # noqa: E402

ORDER = {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": "sku-2", "quantity": 1}]}


def _policies_of(template: dict[str, Any], function_name: str) -> str:
    """Every identity policy statement of the function's role, as text."""
    (function,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["FunctionName"] == function_name
    ]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return json.dumps(
        [
            r["Properties"]["PolicyDocument"]
            for r in template["Resources"].values()
            if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
        ]
    )


def _api_methods(template: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of every non-catch-all API Gateway method of the template."""
    resources = {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::ApiGateway::Resource"}

    def path(reference: Any) -> str:
        parts: list[str] = []
        while isinstance(reference, dict) and reference.get("Ref") in resources:
            properties = resources[reference["Ref"]]["Properties"]
            parts.insert(0, properties["PathPart"])
            reference = properties["ParentId"]
        return "/" + "/".join(parts)

    return sorted(
        (r["Properties"]["HttpMethod"], path(r["Properties"]["ResourceId"]))
        for r in template["Resources"].values()
        if r["Type"] == "AWS::ApiGateway::Method" and r["Properties"]["HttpMethod"] != "ANY"
    )


def main(step: str, consumer: str, route_suffix: str) -> dict[str, Any]:
    assembly = synthesize("local")
    app = json.loads((assembly / "retrysafe-local-app.template.json").read_text())
    data = json.loads((assembly / "retrysafe-local-data.template.json").read_text())
    names = [
        r["Properties"]["FunctionName"]
        for r in app["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    states = state_machine_definition(app, {n: n for n in names})["States"]
    functions = {
        r["Properties"]["FunctionName"]: r["Properties"]
        for r in app["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    step_function = workflow_tasks(app).get(step)
    consumer_function = f"retrysafe-local-{consumer}"
    publish = functions["retrysafe-local-publish-events"]["Environment"]["Variables"]
    queue_output = "".join(p.capitalize() for p in consumer.split("-")) + "QueueUrl"
    report: dict[str, Any] = {
        "state": {k: v for k, v in states.get(step, {}).items() if k in ("Type", "Next", "Resource")},
        "next_of": {name: state.get("Next") for name, state in states.items()},
        "step_env": functions.get(step_function or "", {}).get("Environment", {}).get("Variables", {}),
        "step_policy": _policies_of(app, step_function) if step_function else "",
        "consumer_env": functions.get(consumer_function, {}).get("Environment", {}).get("Variables", {}),
        "consumer_policy": _policies_of(app, consumer_function) if consumer_function in functions else "",
        "publish_env": sorted(publish),
        "publish_policy": _policies_of(app, "retrysafe-local-publish-events"),
        "queues": sorted(
            r["Properties"]["QueueName"] for r in data["Resources"].values() if r["Type"] == "AWS::SQS::Queue"
        ),
        "chaos_step_functions": sorted(ChaosCloud(assembly).step_functions),
        "chaos_queue_consumers": ChaosCloud(assembly).queue_consumers,
        "interleave_step_order": list(HAPPY_PATH),
        "mutant_functions": {m.name: sorted(m.functions) for m in MUTANTS},
        "mutant_pairs": {m.name: sorted({p.target for p in pairs_for(m)}) for m in MUTANTS},
        "schedule_queues": list(queue_outputs(assembly)),
        "simulator_queue_consumers": queue_consumers(data, app),
        "queue_output": queue_output,
        "template_methods": _api_methods(app),
        "documented": {
            path: sorted(operations)
            for path, operations in json.loads((ROOT / "functions" / "orders" / "openapi.json").read_text())[
                "paths"
            ].items()
        },
    }
    with running_cloud(assembly) as cloud:
        placed = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "recipe-1"})
        order_id = placed.body["order_id"]
        cloud.settle()
        (execution,) = cloud.executions()
        history = cloud.sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
        entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
        items = cloud.dynamodb.scan(TableName=cloud.outputs["NotificationsTableName"])["Items"]
        report["run"] = {
            "execution": cloud.wait(execution["executionArn"])["status"],
            "entered": entered,
            "order": cloud.api("GET", f"/orders/{order_id}").body,
            "consumer_items": sorted(i["sk"]["S"].split("#")[0] for i in items),
            "consumer_invocations": sum(1 for i in cloud.invocations if i.function == consumer_function),
            "violations": check(cloud.stores()).violations,
            "route_answer": vars(cloud.api("GET", f"/orders/{order_id}{route_suffix}")),
            "unknown_order_answer": vars(cloud.api("GET", f"/orders/no-such-order{route_suffix}")),
        }
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3]), default=str))
