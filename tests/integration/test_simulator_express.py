"""The simulator's patch 5 (lab/src/simulator/patches.py): Express's time limit is kept on the simulated
clock, which moto's wall-clock timer never sees move."""

from __future__ import annotations

import json
import types
from unittest import mock

import boto3
from moto import mock_aws

from simulator.clock import Clock
from simulator.lambdas import _SFN_RETRIER
from simulator.patches import express_workflows

ROLE = "arn:aws:iam::123456789012:role/r"
# A state that fails every time, retried every 200 s up to 5 times (1,000 s in all), in an Express
# state machine that may run 300 s.
RETRIED_PAST_THE_LIMIT = {
    "StartAt": "P",
    "TimeoutSeconds": 300,
    "States": {
        "P": {
            "Type": "Parallel",
            "Branches": [{"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "Boom"}}}],
            "Retry": [
                {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 200, "MaxAttempts": 5, "BackoffRate": 1}
            ],
            "End": True,
        }
    },
}


def test_an_execution_past_its_time_limit_on_the_simulated_clock_is_timed_out() -> None:
    # Given an execution whose retries wait 1,000 simulated seconds in all, with a 300 s limit
    clock = Clock()
    began = clock()
    with (
        mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
        express_workflows(clock),
        mock.patch(f"{_SFN_RETRIER}.time", types.SimpleNamespace(sleep=clock.advance)),
    ):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps(RETRIED_PAST_THE_LIMIT), roleArn=ROLE, type="EXPRESS"
        )["stateMachineArn"]
        # When it runs
        ended = sfn.start_sync_execution(stateMachineArn=machine, input="{}")
    # Then it ends TIMED_OUT at its first retry past the limit (the second, at 400 s), where moto's
    # wall-clock timer would have let the retries run out (FAILED)
    assert ended["status"] == "TIMED_OUT"
    assert 400 <= clock() - began < 600
