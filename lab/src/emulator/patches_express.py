"""Express workflows on moto 5.2.5: patches E1-E6, the local cloud's and the simulator's.

moto runs an EXPRESS state machine as if it were Standard: StartExecution dedupes its names,
DescribeExecution and GetExecutionHistory answer, and StartSyncExecution is not implemented (404
"Not yet implemented"). AWS's Express does none of that, and what this project proves on Express
depends on it, so both clouds run Express as AWS does. `localcloud.patches` applies `replacements()`
with the others; the simulator for the life of one cloud (`simulator.patches.express_workflows`,
which also puts the time limit on its simulated clock).

E1. StartSyncExecution: runs an Express execution on the caller's request and answers when it
    has ended: SUCCEEDED, FAILED or TIMED_OUT, with its error and cause (a failure is an answer,
    HTTP 200). A Standard state machine is refused (`StateMachineTypeNotSupported`). Built on the
    executor moto already has for it (its parser's `SyncExecution`), which no action reached.
E2. No name dedup on Express: every StartExecution or StartSyncExecution is an execution of its own,
    named as asked, with an Express ARN
    (`arn:aws:states:<region>:<account>:express:<machine>:<name>:<id>`), so two starts of one name
    run concurrently ("Starting multiple workflows with the same name results in concurrent
    executions", the Step Functions guide).
E3. No execution API on Express: DescribeExecution, GetExecutionHistory, StopExecution and
    RedriveExecution refuse an Express execution's ARN (`InvalidArn`), ListExecutions an Express
    state machine (`StateMachineTypeNotSupported`), as the API reference says of each; an Express
    execution is known only by what StartSyncExecution answers and by logs.
E4. The time limit: an Express execution is stopped (TIMED_OUT) at its definition's TimeoutSeconds
    and at 5 minutes at the latest, which moto does not know. Here the limit is measured in wall
    time (moto's own thread join); the simulator measures it on its clock.
E5. CloudFormation: moto's `AWS::StepFunctions::StateMachine` ignores StateMachineType (every state
    machine it creates is STANDARD) and LoggingConfiguration; they are passed on.
E6. The endpoint of StartSyncExecution is the `sync-` host (`sync-states.<region>.amazonaws.com`,
    its operation's host prefix), which moto's in-process routing does not know. (The local cloud's
    workers send every call to its one endpoint instead: `localcloud.lambdas` switches the SDK's
    host prefix off, as a custom endpoint needs.)
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from moto import backend_index
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.moto_api._internal import mock_random
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions import urls as sfn_urls
from moto.stepfunctions.parser.api import StateMachineType
from moto.stepfunctions.parser.asl.component.program.program import Program
from moto.stepfunctions.parser.backend.execution import Execution, SyncExecution
from moto.stepfunctions.parser.models import StepFunctionsParserBackend
from moto.stepfunctions.parser.utils import TMP_THREADS
from moto.stepfunctions.responses import StepFunctionResponse

EXPRESS = "EXPRESS"
# AWS stops an Express execution 5 minutes after its start (infra/capacity.py states the same fact
# for the templates; a test holds the two equal).
EXPRESS_TIME_LIMIT_SECONDS = 300
_SYNC_HOST = r"https?://sync-states\.(.+)\.amazonaws.com"
_RESOURCE_TYPE = re.compile(r"^arn:[^:]+:states:[^:]*:[^:]*:(?P<type>[^:]+):")
_ABSENT = object()


class StateMachineTypeNotSupported(JsonRESTError):
    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("StateMachineTypeNotSupported", message)


class InvalidArn(JsonRESTError):
    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("InvalidArn", message)


class InvalidExecutionInput(JsonRESTError):
    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("InvalidExecutionInput", message)


def is_express(state_machine: Any) -> bool:
    return getattr(state_machine, "type", "STANDARD") == EXPRESS


def is_express_arn(execution_arn: str) -> bool:
    """`arn:aws:states:...:express:...` (an Express execution), not `...:execution:...`."""
    match = _RESOURCE_TYPE.match(execution_arn or "")
    return match is not None and match["type"] == "express"


def express_executions(backend: Any, state_machine_arn: str) -> list[Any]:
    """Every Express execution of a state machine, oldest first: what no API lists (E3), for the
    clouds' own bookkeeping and tests."""
    machine = backend.describe_state_machine(state_machine_arn)
    return [e for e in machine.executions if is_express_arn(e.execution_arn)]


# --- E1, E2 -------------------------------------------------------------------------------------
def start_express(
    backend: StepFunctionsParserBackend,
    state_machine_arn: str,
    name: str | None,
    execution_input: str,
    *,
    sync: bool,
) -> Any:
    """A new execution of an Express state machine (never an existing one: E2), started; a sync
    one has ended when this returns (moto's SyncExecutionWorker runs it on this thread)."""
    machine: Any = backend.describe_state_machine(state_machine_arn)
    if not is_express(machine):
        raise StateMachineTypeNotSupported(
            f"{state_machine_arn} is a {machine.type} state machine: StartSyncExecution is for EXPRESS"
        )
    try:
        json.loads(execution_input)
    except ValueError as error:
        raise InvalidExecutionInput(str(error)) from error
    name = name or str(mock_random.uuid4())
    _, partition, _, region, account = state_machine_arn.split(":")[:5]
    arn = f"arn:{partition}:states:{region}:{account}:express:{machine.name}:{name}:{mock_random.uuid4()}"
    # This execution's snapshot of the definition; like moto's own start, without the executions
    # (live threads and locks) and sharing the backend.
    snapshot = copy.deepcopy(machine, {id(machine.executions): [], id(machine.backend): machine.backend})
    # What the execution's environment reads as its type (moto's model always says STANDARD).
    snapshot.sm_type = StateMachineType.EXPRESS
    kind: Any = SyncExecution if sync else Execution
    execution = kind(
        name=name,
        sm_type=StateMachineType.EXPRESS,
        role_arn=snapshot.roleArn,
        exec_arn=arn,
        account_id=account,
        region_name=region,
        state_machine=snapshot,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data=execution_input,
        activity_store={},
    )
    machine.executions.append(execution)
    execution.start()
    return execution


def _start_sync_execution(self: StepFunctionResponse) -> ActionResult:
    execution = start_express(
        self.stepfunction_backend,  # type: ignore[arg-type]
        self._get_param("stateMachineArn"),
        self._get_param("name"),
        self._get_param("input", if_none="{}"),
        sync=True,
    )
    return ActionResult(dict(execution.to_start_sync_execution_output()))


def _start_execution(original: Callable[..., Any]) -> Callable[..., Any]:
    def start_execution(
        self: StepFunctionsParserBackend, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        execution_input = args[0] if args else kwargs.get("execution_input")
        if is_express(self.describe_state_machine(state_machine_arn)):
            return start_express(self, state_machine_arn, name, execution_input or "{}", sync=False)
        return original(self, state_machine_arn, name, *args, **kwargs)

    return start_execution


# --- E3 ------------------------------------------------------------------------------------------
def _refusing_express_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    def action(self: StepFunctionResponse) -> Any:
        arn = self._get_param("executionArn")
        if is_express_arn(arn):
            raise InvalidArn(f"Invalid Arn: 'Resource type not valid in this context: express' ({arn})")
        return original(self)

    return action


def _list_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    def list_executions(self: StepFunctionResponse) -> Any:
        arn = self._get_param("stateMachineArn")
        if is_express(self.stepfunction_backend.describe_state_machine(arn)):
            raise StateMachineTypeNotSupported(
                f"{arn}: ListExecutions is not supported by EXPRESS state machines"
            )
        return original(self)

    return list_executions


# --- E4 ------------------------------------------------------------------------------------------
def time_limit(program: Any, env: Any) -> float | None:
    """When the execution is stopped, in seconds after its start: its TimeoutSeconds, and on
    Express at most 5 minutes (None: no limit)."""
    limits = [program.timeout_seconds.timeout_seconds] if program.timeout_seconds else []
    if getattr(env, "execution_type", None) == EXPRESS:
        limits.append(EXPRESS_TIME_LIMIT_SECONDS)
    return float(min(limits)) if limits else None


def _program_eval(self: Program, env: Any) -> None:
    """moto's `Program.eval` with the Express limit beside TimeoutSeconds (wall time)."""
    env.next_state_name = self.start_at.start_at_name
    worker = threading.Thread(target=super(Program, self).eval, args=(env,), daemon=True)
    TMP_THREADS.append(worker)
    worker.start()
    worker.join(timeout=time_limit(self, env))
    if worker.is_alive():
        env.set_timed_out()


# --- E5 ------------------------------------------------------------------------------------------
def _create_from_cloudformation_json(
    _cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
) -> Any:
    properties = cloudformation_json["Properties"]
    backend = sfn_models.stepfunctions_backends[account_id][region_name]
    return backend.create_state_machine(
        properties.get("StateMachineName", resource_name),
        properties.get("DefinitionString", ""),
        properties.get("RoleArn", ""),
        tags=sfn_models.cfn_to_api_tags(properties.get("Tags", [])),
        loggingConfiguration=_logging(properties.get("LoggingConfiguration")),
        sm_type=properties.get("StateMachineType"),
    )


def _logging(cfn: Any) -> dict[str, Any] | None:
    """CloudFormation's LoggingConfiguration in the API's words (`Level` -> `level`, ...)."""
    if not cfn:
        return None
    destinations = [
        {"cloudWatchLogsLogGroup": {"logGroupArn": d.get("CloudWatchLogsLogGroup", {}).get("LogGroupArn")}}
        for d in cfn.get("Destinations", [])
    ]
    return {
        "level": cfn.get("Level", "OFF"),
        "includeExecutionData": bool(cfn.get("IncludeExecutionData", False)),
        "destinations": destinations,
    }


# --- applying them -------------------------------------------------------------------------------
def replacements() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) of E1-E5; each wraps what is there when it is called (apply
    them after the other patches of the same attributes)."""
    response = StepFunctionResponse
    found = [
        (response, "start_sync_execution", _start_sync_execution),
        (
            StepFunctionsParserBackend,
            "start_execution",
            _start_execution(StepFunctionsParserBackend.start_execution),
        ),
        (response, "list_executions", _list_executions(response.list_executions)),
        (Program, "eval", _program_eval),
        (
            sfn_models.StateMachine,
            "create_from_cloudformation_json",
            classmethod(_create_from_cloudformation_json),
        ),
    ]
    for action in ("describe_execution", "get_execution_history", "stop_execution", "redrive_execution"):
        original = getattr(response, action, None)
        if original is not None:
            found.append((response, action, _refusing_express_executions(original)))
    return found


def sync_endpoint() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) of E6: moto's in-process routing with the sync- host."""
    pattern = re.compile(_SYNC_HOST)
    return [
        (
            backend_index,
            "backend_url_patterns",
            [*backend_index.backend_url_patterns, ("stepfunctions", pattern)],
        ),
        (sfn_urls, "url_bases", [*sfn_urls.url_bases, _SYNC_HOST]),
    ]


def apply(originals: dict[str, Any]) -> None:
    """Patch moto (E1-E5; the local cloud has no use for E6); what it replaces goes into
    `originals` for `restore`."""
    applied = replacements()
    originals["express:applied"] = [(owner, name) for owner, name, _ in applied]
    for owner, name, replacement in applied:
        originals[f"express:{owner.__name__}.{name}"] = vars(owner).get(name, _ABSENT)
        setattr(owner, name, replacement)


def restore(originals: dict[str, Any]) -> None:
    for owner, name in reversed(originals.pop("express:applied", [])):
        original = originals.pop(f"express:{owner.__name__}.{name}")
        if original is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
