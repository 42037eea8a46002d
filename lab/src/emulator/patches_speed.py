"""moto's hot paths without their repeated work: patches 16-21, the local cloud's and the simulator's.

Each removes work moto repeats at every request and changes no answer; `localcloud.patches`
applies them with the others, the simulator for the life of one cloud (`simulator.patches`).

16. One parse per state machine definition: moto parses the ASL (antlr, in pure Python) at every
    StartExecution, the largest single cost of an execution. The program it builds holds no
    evaluation state (that lives in each execution's Environment); its only lazily set attribute,
    `heap_key`, is set on every component before the program is shared.
17. DynamoDB responses written as JSON directly: moto serializes every response through the
    botocore model, shape by shape (an item's every attribute value), which was the largest cost
    of a DynamoDB call. A successful response whose members are the operation's output members
    and that holds only JSON types (no `B`/`BS` bytes, no timestamps) is the same document
    `json.dumps` writes; anything else takes moto's serializer.
18. DynamoDB update-expression validation without the repeated work: each of moto's ten AST passes
    rebuilt its node-type map at every node, and the clause-count check ran again under every
    nested UpdateExpression node (quadratic in the actions). The map is built once per pass and the
    count checked at the root, whose clauses include every nested node's.
19. One listing of a response class's methods: moto's dispatch (`BaseResponse.call_action`) lists
    them with `inspect.getmembers` at every request (`method_names_from_class`, ~4 % of a chaos
    schedule's CPU). A class's methods do not change once the patches are on (they are all applied
    before the first request), so each class is listed once.
20. One backend lookup per host: moto's server dispatcher finds a request's service by listing its
    own package directory (a `stat` per entry) and then trying every service's URL patterns, at
    every request and under one global lock. The answer depends only on the host name, so it is
    looked up once per host.
21. One Lambda client per region and endpoint for Step Functions' Lambda tasks: moto builds a new
    boto3 client at every task (`boto_client_for`). botocore clients are thread-safe and this one
    holds no per-execution state (moto's fixed credentials and settings, no retries), so it is
    shared.
    20 and 21 were ~10 % and ~12 % of the local cloud process's CPU under `make load` (py-spy
    samples of the process); with both (and `workers.json` written only when workers change), its
    CPU per entity (the sample's orders) went from 0.75 s to 0.50-0.55 s
    (docs/costs.md, "The local cloud under load").
"""

from __future__ import annotations

import functools
import json
from typing import Any

import boto3
import moto.core.responses
from botocore.config import Config
from moto.core.models import botocore_stubber
from moto.core.responses import ActionResult
from moto.core.utils import method_names_from_class
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import ActionCountValidator
from moto.dynamodb.responses import DynamoHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.settings import moto_server_port
from moto.stepfunctions.parser.asl.component.component import Component
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from emulator.config import CONCURRENT_CALLS

_ABSENT = object()  # an attribute the owner inherits rather than defines


def _fix_heap_keys(component: Any, seen: set[int]) -> None:
    """Touch `heap_key` on every evaluation component reachable from `component` (set once, here)."""
    if id(component) in seen:
        return
    seen.add(id(component))
    if isinstance(component, EvalComponent):
        _ = component.heap_key
    children = vars(component).values() if isinstance(component, Component) else component
    for child in children:
        if isinstance(child, Component | list | tuple):
            _fix_heap_keys(child, seen)


@functools.cache
def _parse_once(definition: str) -> tuple[Any, Any]:
    program, tree = _PARSE(definition)
    _fix_heap_keys(program, set())
    return program, tree


_PARSE = AmazonStateLanguageParser.parse
_SERIALIZED = DynamoHandler.serialized


@functools.cache
def _output_members(operation: str) -> frozenset[str]:
    from moto.core.responses import get_service_model  # noqa: PLC0415

    shape = get_service_model("dynamodb").operation_model(operation).output_shape
    return frozenset(shape.members) if shape is not None else frozenset()


def _serialized_as_json(self: DynamoHandler, action_result: ActionResult) -> Any:
    result = action_result.result
    if isinstance(result, dict):
        members = _output_members(self._get_action())
        try:
            body = json.dumps({k: v for k, v in result.items() if k in members})
        except TypeError:  # bytes, datetimes: moto's serializer knows their wire forms
            return _SERIALIZED(self, action_result)
        return 200, {"Content-Type": "application/x-amz-json-1.0", **self.response_headers}, body
    return _SERIALIZED(self, action_result)


def _processing_map(self: DepthFirstTraverser) -> dict[type, Any]:
    cached: dict[type, Any] | None = self.__dict__.get("_map_once")
    if cached is None:
        cached = self.__dict__["_map_once"] = self._processing_map()
    return cached


def _nodes_to_be_processed(self: DepthFirstTraverser) -> tuple[type, ...]:
    return tuple(_processing_map(self))


def _process(self: DepthFirstTraverser, node: Any) -> Any:
    for class_key, processor in _processing_map(self).items():
        if isinstance(node, class_key):
            return processor(node)
    return None


_VERIFY_ACTION_COUNTS = ActionCountValidator.verify_action_counts


def _verify_action_counts_at_root(self: ActionCountValidator, node: Any) -> Any:
    return _VERIFY_ACTION_COUNTS(self, node) if node.parent is None else node


_BACKEND_FOR_HOST = DomainDispatcherApplication.get_backend_for_host
_backend_by_host: dict[str | None, Any] = {}


def _backend_for_host_once(self: DomainDispatcherApplication, host: str | None) -> Any:
    # Called under the dispatcher's lock; the patterns are moto's static index, the same for every app.
    if host not in _backend_by_host:
        _backend_by_host[host] = _BACKEND_FOR_HOST(self, host)
    return _backend_by_host[host]


_CLIENT_FOR = lambda_eval_utils.boto_client_for
_lambda_clients: dict[tuple[str, str, str | None], Any] = {}


def _shared_client(region: str, service: str) -> Any:
    moto_client = _CLIENT_FOR(region=region, service=service)
    # moto's settings, with a pool for every concurrent task: botocore's 10 drops a connection (and
    # logs a warning) at every call beyond them.
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=moto_client.meta.endpoint_url,
        aws_access_key_id="localcloud",
        aws_secret_access_key="localcloud",  # noqa: S106 - moto accepts any credentials
        config=moto_client.meta.config.merge(Config(max_pool_connections=CONCURRENT_CALLS)),
    )


def _client_for(region: str, service: str, state_credentials: Any = None) -> Any:  # noqa: ARG001 - moto ignores them too
    # The endpoint is in-process (mock_aws) or the server's port, which a later local cloud in the
    # same process may change. Two threads may both build the first one; either serves.
    key = (region, service, None if botocore_stubber.enabled else moto_server_port())
    client = _lambda_clients.get(key)
    if client is None:
        client = _lambda_clients[key] = _shared_client(region, service)
    return client


def replacements() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) of patches 16-21."""
    return [
        (AmazonStateLanguageParser, "parse", staticmethod(_parse_once)),
        (DynamoHandler, "serialized", _serialized_as_json),
        (DepthFirstTraverser, "nodes_to_be_processed", _nodes_to_be_processed),
        (DepthFirstTraverser, "process", _process),
        (ActionCountValidator, "verify_action_counts", _verify_action_counts_at_root),
        (moto.core.responses, "method_names_from_class", functools.cache(method_names_from_class)),
        (DomainDispatcherApplication, "get_backend_for_host", _backend_for_host_once),
        (lambda_eval_utils, "boto_client_for", _client_for),
    ]


def apply(originals: dict[str, Any]) -> None:
    """Patch moto; what it replaces goes into `originals` for `restore`."""
    for owner, name, replacement in replacements():
        originals[f"speed:{owner.__name__}.{name}"] = vars(owner).get(name, _ABSENT)
        setattr(owner, name, replacement)


def restore(originals: dict[str, Any]) -> None:
    for owner, name, _ in replacements():
        original = originals.pop(f"speed:{owner.__name__}.{name}")
        if original is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
