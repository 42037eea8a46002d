"""Every change the local cloud makes to moto 5.2.5, in one place, each with what moto lacks.

`install(runtime)` applies them once per process (idempotent); `uninstall()` restores moto.
Nothing else in `localcloud` reaches into moto's internals: everything else goes through the
endpoint's AWS APIs, and stacks are deployed by the CDK CLI (`python -m ops.deploy`).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import inspect
import json
import logging
import threading
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from moto.awslambda import models as lambda_models
from moto.cloudformation import exceptions as cfn_exceptions
from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing
from moto.cloudformation import responses as cfn_responses
from moto.core.utils import utcnow
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.exceptions import MockValidationException, ResourceNotFoundException
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table
from moto.sqs import models as sqs_models
from moto.ssm import models as ssm_models
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions.parser import models as sfn_parser_models

from localcloud.lambdas import FunctionSpec, LambdaRuntime

logger = logging.getLogger("localcloud.patches")

_lock = threading.Lock()
_runtime: LambdaRuntime | None = None
_originals: dict[str, Any] = {}


def _spec(fn: Any) -> FunctionSpec:
    env = {str(key): str(value) for key, value in (fn.environment_vars or {}).items()}
    return FunctionSpec(
        name=fn.function_name,
        arn=fn.function_arn,
        handler=fn.handler or "",
        runtime=fn.run_time or "python3.11",
        timeout=float(fn.timeout or 3),
        memory_mb=int(fn.memory_size or 128),
        region=fn.region,
        environment=env,
        code=fn.code_bytes or b"",
    )


# 1. moto runs function code only in Docker (`_invoke_lambda` starts a container; without a Docker
#    engine it returns "error running docker"). Direct invokes, moto's event source mappings and
#    Step Functions Lambda tasks all end up here, so this one method is where code runs: in the
#    function's own warm worker process (localcloud.lambdas).
def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
    runtime = _runtime
    if runtime is None:
        return (
            json.dumps({"errorType": "Lambda.ServiceException", "errorMessage": "no local runtime"}),
            True,
            "",
        )
    if isinstance(event, str | bytes):  # moto passes the raw body "{}" when the payload is empty
        with contextlib.suppress(ValueError):
            event = json.loads(event or "{}")
    result = runtime.invoke(_spec(self), event)
    if result.logs:
        try:
            self.save_logs(result.logs)  # also to moto's CloudWatch Logs, as Lambda does
        except Exception:
            logger.debug("could not store logs of %s", self.function_name, exc_info=True)
    return result.payload, result.errored, result.logs


# 2. moto's `invoke` runs InvocationType=Event synchronously inside the request and marks every
#    function error "Handled". Lambda queues an Event invocation and answers 202 at once, and reports
#    errors raised by the function as "Unhandled". (Lambda's two retries of a failed async call are
#    not emulated.)
def _invoke(self: Any, body: str, request_headers: Any, response_headers: Any) -> str | bytes:
    event = json.loads(body) if body else {}
    if request_headers.get("x-amz-invocation-type", "RequestResponse") == "Event":
        threading.Thread(target=self._invoke_lambda, args=(event,), daemon=True).start()
        return ""
    payload, errored, logs = self._invoke_lambda(event=event)
    if errored:
        response_headers["x-amz-function-error"] = "Unhandled"
    response_headers["x-amz-log-result"] = base64.b64encode(logs.encode("utf-8")).decode("ascii")
    return payload.encode("utf-8")


# 3. moto fires an SQS event source mapping synchronously inside SendMessage (no poller, receive
#    count always 1, ReportBatchItemFailures ignored). The queue's mapping table is made write-only
#    so SendMessage never sees a mapping; `localcloud.pollers` polls each mapping as Lambda does.
def _no_mappings(_queue: Any) -> dict[str, Any]:
    return {}


def _drop_mapping(_queue: Any, _value: Any) -> None:
    return None


# 4. CloudFormation creates state machines in `moto.stepfunctions.models.stepfunctions_backends`,
#    but with execution switched on the API (ListStateMachines, StartExecution) reads
#    `stepfunctions_parser_backends`. The CloudFormation model looks the backend up by that module
#    name at call time, so pointing the name at the parser backends makes them one.
def _patch_stepfunctions() -> None:
    _originals["sfn_backends"] = sfn_models.stepfunctions_backends
    sfn_models.stepfunctions_backends = sfn_parser_models.stepfunctions_parser_backends  # type: ignore[assignment]


# 5. CDK templates resolve the Powertools layer ARN from the public SSM parameter
#    /aws/service/powertools/... at deploy time. moto ships none of those, refuses to create names
#    under /aws (reserved, as on AWS), and its CloudFormation resolves an SSM-typed parameter's
#    default even when the deploy overrides it, so no template using one could deploy. The local
#    cloud answers every name under that path with its stand-in layer (`serve_public_layer`), as
#    AWS answers with the real one; workers import Powertools from the venv.
POWERTOOLS_PARAMETER_PREFIX = "/aws/service/powertools/"
_public_layer: dict[str, str] = {}  # "arn": the stand-in layer version


def serve_public_layer(layer_arn: str) -> None:
    """Answer the public Powertools layer parameters with this layer version's ARN."""
    _public_layer["arn"] = layer_arn


def _public_parameter(name: str, account_id: str) -> Any:
    return ssm_models.Parameter(  # type: ignore[abstract]
        account_id=account_id,
        name=name,
        value=_public_layer["arn"],
        parameter_type="String",
        description="the local cloud's stand-in for the public Powertools layer",
        allowed_pattern=None,
        keyid=None,
        last_modified_date=utcnow(),
        version=1,
        data_type="text",
    )


def _patch_public_parameters() -> None:
    original = ssm_models.SimpleSystemManagerBackend.get_parameter
    _originals["get_parameter"] = original

    def get_parameter(self: Any, name: str) -> Any:
        found = original(self, name)
        if found is None and name.startswith(POWERTOOLS_PARAMETER_PREFIX) and "arn" in _public_layer:
            return _public_parameter(name, self.account_id)
        return found

    ssm_models.SimpleSystemManagerBackend.get_parameter = get_parameter  # type: ignore[method-assign]


# 6. moto's CloudFormation logs a warning and a UserWarning per resource type it cannot create
#    (DEVELOPERS.md lists them with what the local cloud does about each).
#    moto's Step Functions interpreter logs an ERROR with a multi-kilobyte repr of the state for
#    every task error, including the ones a Retry or Catch handles (a FenceBusy retry loop fills
#    the live log); GetExecutionHistory has the same facts, so that one logger is silenced.
def _skip_notice(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("No Moto CloudFormation support")


def _quiet_skipped_resources() -> None:
    logging.getLogger("moto").addFilter(_skip_notice)
    logging.getLogger("moto.stepfunctions.parser.asl.component.eval_component").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)


# 7. StartExecution without a name: Step Functions names the execution with a UUID; moto's
#    executing (parser) backend keeps the name None, so the second unnamed execution of a state
#    machine fails with ExecutionAlreadyExists.
def _patch_execution_names() -> None:
    backend_cls = sfn_parser_models.StepFunctionsParserBackend
    original = backend_cls.start_execution
    _originals["start_execution"] = original

    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    backend_cls.start_execution = start_execution  # type: ignore[method-assign]


# 8. moto's server runs requests on concurrent threads with no lock around a DynamoDB operation, so
#    two conditional writes of the same item can both pass their condition (check and write are
#    separate steps), and two StartExecution calls with the same name can both create an execution.
#    DynamoDB's single-item atomicity and Step Functions' execution-name uniqueness are what this
#    project's idempotency, dedup and fences rely on, so those requests are serialized. (SQS is
#    left concurrent: long polls must not block, and a message seen twice is what SQS may do.)
SERIALIZED_TARGETS = ("DynamoDB_20120810.", "AWSStepFunctions.StartExecution")


class SerializeAtomicRequests:
    """WSGI wrapper around moto's app: one DynamoDB / StartExecution request at a time."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if not target.startswith(SERIALIZED_TARGETS):
            return self._app(environ, start_response)
        with self._lock:
            # moto builds the whole response inside this call; materialize it under the lock.
            return list(self._app(environ, start_response))


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
def _patch_updates_without_support() -> None:
    original = cfn_parsing.parse_and_update_resource
    _originals["parse_and_update_resource"] = original

    def parse_and_update_resource(
        logical_id: str, resource_json: Any, resources_map: Any, **kwargs: Any
    ) -> Any:
        updated = original(logical_id, resource_json, resources_map, **kwargs)
        if updated is None:
            logger.info("moto cannot update %s (%s): kept as deployed", logical_id, resource_json.get("Type"))
            return resources_map[logical_id]
        return updated

    cfn_parsing.parse_and_update_resource = parse_and_update_resource  # type: ignore[assignment]


# 14. moto's TransactWriteItems deep-copies every table it names before its first write, so that a
#     cancelled transaction can swap the copies back in: O(table) per transaction (~1.7 ms on an
#     empty table, ~72 ms at 2,000 items), and everything transactional slowed down as the local
#     cloud's data grew. Here the transaction snapshots only the items it names (at most 100) and a
#     cancelled one puts them back (and drops the stream records it added); moto's own backup is
#     taken by reference (a Table deep-copies to itself for the length of the call), so its
#     rollback swaps each table for itself. The lock keeps that switch to this call: in the server
#     every DynamoDB request is serialized anyway (8.), so it costs nothing there.
_ItemSnapshot = tuple[Table, DynamoType, DynamoType | None, Item | None]
_transaction_lock = threading.Lock()


def _same_table(table: Table, _memo: dict[int, Any]) -> Table:
    return table


def _touched_items(backend: Any, transact_items: list[dict[str, Any]]) -> list[_ItemSnapshot]:
    """A copy of each item the transaction names, as it is now (None: absent)."""
    snapshots: list[_ItemSnapshot] = []
    for entry in transact_items:
        for op_type, op in entry.items():
            try:
                table = backend.get_table(op.get("TableName"))
                key = op.get("Item") if op_type == "Put" else op.get("Key")
                hash_key, range_key = backend.get_keys_value(table, key or {})
            except (ResourceNotFoundException, MockValidationException):
                continue  # moto refuses this entry before it writes anything
            current = table.get_item(hash_key, range_key)
            snapshots.append((table, hash_key, range_key, copy.deepcopy(current)))
    return snapshots


def _put_back(snapshots: list[_ItemSnapshot], stream_lengths: dict[Table, int]) -> None:
    for table, hash_key, range_key, item in reversed(snapshots):
        if range_key is None:
            if item is None:
                table.items.pop(hash_key, None)
            else:
                table.items[hash_key] = item  # type: ignore[assignment]  # moto keeps a hash-only item there
            continue
        partition = table.items[hash_key]
        if item is not None:
            partition[range_key] = item
            continue
        partition.pop(range_key, None)
        if not partition:
            del table.items[hash_key]
    for table, length in stream_lengths.items():
        if table.stream_shard is not None:
            del table.stream_shard.items[length:]


def transactions_by_item(original: Callable[..., None]) -> Callable[..., None]:
    """moto's `DynamoDBBackend.transact_write_items` (`original`) with patch 14 (the simulator's too)."""

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _transaction_lock:
            snapshots = _touched_items(self, transact_items)
            streams = {t: len(t.stream_shard.items) for t, *_ in snapshots if t.stream_shard is not None}
            Table.__deepcopy__ = _same_table  # type: ignore[attr-defined]
            try:
                original(self, transact_items)
            except BaseException:
                _put_back(snapshots, streams)
                raise
            finally:
                del Table.__deepcopy__  # type: ignore[attr-defined]

    return transact_write_items


def _patch_transactions() -> None:
    backend_cls = dynamodb_models.DynamoDBBackend
    _originals["transact_write_items"] = backend_cls.transact_write_items
    backend_cls.transact_write_items = transactions_by_item(backend_cls.transact_write_items)  # type: ignore[method-assign]


# 15. moto's Query of a table (not an index) lists every item of the table, sorts them all by
#     (hash, range) key (`Table.all_items`: n log n DynamoType comparisons) and then keeps the
#     queried partition: ~8 ms at 2,000 items for a one-partition query (GetItem ~0.2 ms), and
#     every step's read of its order slowed down with the data. Here that listing is the queried
#     partition only (`Table.items[hash_key]`, where moto stores it); moto's query then sorts,
#     pages and filters it as before. Index queries and Scan still list the whole table.
_query_partition = threading.local()  # the (table, hash key) a base-table query on this thread lists


def query_by_partition(
    original_query: Callable[..., Any], original_all_items: Callable[..., list[Item]]
) -> tuple[Callable[..., Any], Callable[..., list[Item]]]:
    """moto's `Table.query` and `Table.all_items` with patch 15 (the simulator's too)."""
    query_signature = inspect.signature(original_query)

    def all_items(self: Table) -> list[Item]:
        scope = getattr(_query_partition, "scope", None)
        if scope is None or scope[0] is not self:
            return original_all_items(self)
        stored = self.items.get(scope[1])
        if stored is None:
            return []
        return list(stored.values()) if self.range_key_attr else [stored]

    def query(self: Table, *args: Any, **kwargs: Any) -> Any:
        arguments = query_signature.bind(self, *args, **kwargs).arguments
        if arguments.get("index_name") or arguments.get("hash_key") is None:
            return original_query(self, *args, **kwargs)
        _query_partition.scope = (self, arguments["hash_key"])
        try:
            return original_query(self, *args, **kwargs)
        finally:
            _query_partition.scope = None

    return query, all_items


def _patch_query_by_partition() -> None:
    _originals["table_query"] = Table.query
    _originals["table_all_items"] = Table.all_items
    Table.query, Table.all_items = query_by_partition(Table.query, Table.all_items)  # type: ignore[method-assign]


def install(runtime: LambdaRuntime) -> None:
    """Apply the patches and route every Lambda invocation in this process to `runtime`."""
    global _runtime  # noqa: PLW0603 - moto's backends are process-global; so is this switch
    with _lock:
        _runtime = runtime
        if _originals:
            return
        function_cls = lambda_models.LambdaFunction
        _originals["_invoke_lambda"] = function_cls._invoke_lambda
        _originals["invoke"] = function_cls.invoke
        _originals["queue_mappings"] = sqs_models.Queue.__dict__.get("lambda_event_source_mappings")
        function_cls._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
        function_cls.invoke = _invoke  # type: ignore[method-assign]
        sqs_models.Queue.lambda_event_source_mappings = property(_no_mappings, _drop_mapping)  # type: ignore[assignment]
        _patch_stepfunctions()
        _quiet_skipped_resources()
        _patch_execution_names()
        _originals["execute_change_set"] = cfn_models.CloudFormationBackend.execute_change_set
        cfn_models.CloudFormationBackend.execute_change_set = _execute_change_set  # type: ignore[method-assign]
        _originals["describe_change_set"] = cfn_responses.CloudFormationResponse.describe_change_set
        _originals["delete_change_set"] = cfn_responses.CloudFormationResponse.delete_change_set
        cfn_responses.CloudFormationResponse.describe_change_set = _describe_change_set_response  # type: ignore[method-assign]
        cfn_responses.CloudFormationResponse.delete_change_set = _delete_change_set_response  # type: ignore[method-assign]
        _originals["stack_parameters"] = cfn_models.Stack.stack_parameters
        cfn_models.Stack.stack_parameters = property(_stack_parameters)  # type: ignore[assignment,method-assign]
        _originals["has_parameters"] = cfn_models.Stack.has_parameters
        cfn_models.Stack.has_parameters = _has_parameters  # type: ignore[method-assign]
        _patch_public_parameters()
        _patch_updates_without_support()
        _patch_transactions()
        _patch_query_by_partition()


def uninstall() -> None:
    """Restore moto (tests use this; a running local cloud keeps its patches until exit)."""
    global _runtime  # noqa: PLW0603
    with _lock:
        _runtime = None
        if not _originals:
            return
        function_cls = lambda_models.LambdaFunction
        function_cls._invoke_lambda = _originals.pop("_invoke_lambda")  # type: ignore[method-assign]
        function_cls.invoke = _originals.pop("invoke")  # type: ignore[method-assign]
        original_mappings = _originals.pop("queue_mappings")
        if original_mappings is None:
            del sqs_models.Queue.lambda_event_source_mappings  # type: ignore[misc]
        else:  # pragma: no cover - moto 5.2.5 sets it per instance
            sqs_models.Queue.lambda_event_source_mappings = original_mappings
        sfn_models.stepfunctions_backends = _originals.pop("sfn_backends")
        sfn_parser_models.StepFunctionsParserBackend.start_execution = _originals.pop("start_execution")  # type: ignore[method-assign]
        cfn_models.CloudFormationBackend.execute_change_set = _originals.pop("execute_change_set")  # type: ignore[method-assign]
        cfn_responses.CloudFormationResponse.describe_change_set = _originals.pop("describe_change_set")  # type: ignore[method-assign]
        cfn_responses.CloudFormationResponse.delete_change_set = _originals.pop("delete_change_set")  # type: ignore[method-assign]
        cfn_models.Stack.stack_parameters = _originals.pop("stack_parameters")  # type: ignore[method-assign]
        cfn_models.Stack.has_parameters = _originals.pop("has_parameters")  # type: ignore[method-assign]
        ssm_models.SimpleSystemManagerBackend.get_parameter = _originals.pop("get_parameter")  # type: ignore[method-assign]
        _public_layer.clear()
        cfn_parsing.parse_and_update_resource = _originals.pop("parse_and_update_resource")
        dynamodb_models.DynamoDBBackend.transact_write_items = _originals.pop("transact_write_items")  # type: ignore[method-assign]
        Table.query = _originals.pop("table_query")  # type: ignore[method-assign]
        Table.all_items = _originals.pop("table_all_items")  # type: ignore[method-assign]
        _originals.clear()


def deployed_functions(*, region: str, account_id: str) -> list[FunctionSpec]:
    """The $LATEST specs of every function in moto's Lambda backend (for prewarming)."""
    return [_spec(fn) for fn in lambda_models.lambda_backends[account_id][region].list_functions()]


def reset_moto() -> None:
    """Forget every resource, as a fresh moto server would (the next local cloud starts empty).

    moto's reset covers every BackendDict, the Step Functions parser backends included.
    """
    from moto.moto_api._internal.models import moto_api_backend  # noqa: PLC0415

    moto_api_backend.reset()


def installed() -> bool:
    return bool(_originals)


def current_runtime() -> LambdaRuntime | None:
    return _runtime
