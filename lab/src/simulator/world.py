"""One moto world for many clouds: deployed once, put back to its just-deployed state between uses.

Every schedule of a fault search needs a cloud as it is right after the deploy and the seed.
Building one means a fresh `mock_aws`, the deploy (tables, queues, functions, the state machine)
and the seed, which was most of a short schedule's time. Inside `reusing()`,
`deployed(cloud, seed=...)` builds that world once per assembly (and app template: a template
mutant gets its own) and afterwards restores it:
every table's items as they were after the seed, every queue empty, no executions; the cloud
takes the deployed names (outputs, queue URLs, function specs) from the first cloud. Outside
`reusing()` it is a fresh world each time (what the tests do, one `mock_aws` each).

Restored: what the simulator's clouds write (items, messages, executions). Not restored, because
deploy-time only: IAM, Lambda functions, the queues' and tables' definitions. A world with an
execution still running is thrown away and deployed again instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moto.dynamodb.models import dynamodb_backends
from moto.sqs.models import sqs_backends

from simulator.events import ACCOUNT, REGION
from simulator.rules import scheduled_rules

if TYPE_CHECKING:
    from moto.core.models import MockAWS

    from simulator.cloud import InProcessCloud


@dataclass
class _World:
    assembly: Path
    first: InProcessCloud  # the cloud that deployed it: names, specs, the resolver
    items: dict[str, Any]  # table name -> moto's items right after the seed


_mock: MockAWS | None = None
_world: _World | None = None


@contextmanager
def reusing() -> Iterator[None]:
    """Within: `deployed` reuses one moto world (per assembly) instead of building one per cloud.
    Reentrant (an inner `reusing()` uses the outer world). Never open a `mock_aws` of your own
    inside it."""
    global _mock, _world  # noqa: PLW0603 - one moto world per process, as moto's backends are
    if _mock is not None:
        yield
        return
    _mock = _new_mock()
    _mock.start()
    try:
        yield
    finally:
        _mock.stop()
        _mock, _world = None, None


@contextmanager
def deployed(cloud: InProcessCloud, *, seed: Callable[[InProcessCloud], None]) -> Iterator[InProcessCloud]:
    """`cloud` deployed and seeded: in a fresh moto world, or (inside `reusing()`) in the reused one."""
    global _world  # noqa: PLW0603
    if _mock is None:
        with _new_mock():
            cloud.deploy()
            seed(cloud)
            yield cloud
        return
    # A mutant of the template (chaos.mutants) deploys a world of its own.
    other = _world is not None and (_world.assembly, _world.first.app_template) != (
        cloud.assembly,
        cloud.app_template,
    )
    if _world is not None and (other or _running_executions()):
        _mock.reset()
        _world = None
    if _world is None:
        cloud.deploy()
        seed(cloud)
        _world = _World(cloud.assembly, cloud, _snapshot())
    else:
        _restore(_world.items)
        _adopt(cloud, _world.first)
    yield cloud


def _new_mock() -> MockAWS:
    from moto import mock_aws  # noqa: PLC0415 - moto's import cost only where a cloud is built

    # Step Functions executes definitions (moto's default only records executions).
    return mock_aws(config={"stepfunctions": {"execute_state_machine": True}})


def _snapshot() -> dict[str, Any]:
    tables = dynamodb_backends[ACCOUNT][REGION].tables
    return {name: copy.deepcopy(table.items) for name, table in tables.items()}


def _restore(items: dict[str, Any]) -> None:
    for name, table in dynamodb_backends[ACCOUNT][REGION].tables.items():
        table.items = copy.deepcopy(items[name])
    for queue in sqs_backends[ACCOUNT][REGION].queues.values():
        with queue._messages_lock:
            queue._messages.clear()
            queue.pending_messages.clear()
            queue.deleted_messages.clear()
    for machine in _state_machines():
        machine.executions.clear()


def _state_machines() -> list[Any]:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends  # noqa: PLC0415

    return list(stepfunctions_parser_backends[ACCOUNT][REGION].state_machines)


def _running_executions() -> bool:
    return any(
        str(getattr(e.exec_status, "value", e.exec_status)) == "RUNNING"
        for machine in _state_machines()
        for e in machine.executions
    )


def _adopt(cloud: InProcessCloud, first: InProcessCloud) -> None:
    """What `deploy` would have told `cloud` (the same assembly gives the same names)."""
    cloud.resolve = first.resolve
    cloud.queue_urls = dict(first.queue_urls)
    cloud.outputs = dict(first.outputs)
    cloud.functions = dict(first.functions)
    cloud.rules = scheduled_rules(cloud.app_template, cloud.resolve.refs.__getitem__, cloud.clock())
