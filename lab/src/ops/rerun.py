"""Start run N+1 of an entity whose run N ended FAILED: `python -m ops.rerun ID`, `make rerun ID=...`.

Runs are an operator's decision, made through one guarded transition on the entity (run == N and
status FAILED -> run N+1, ACCEPTED; `reliability.workflow_runs.Reruns`), then its run's message.
The worker starts only the entity's current run, so a hand-made run-N+1 message can never start
anything, and run N+1 gets new keys everywhere (tokens, fences, a provider's idempotency key).
Refused, with the entity's status and run, unless the current run ended FAILED. Asked again after
a crash between the transition and the send, it only sends the message again.
The entity is the service's declaration's (`ops.service`), read and moved by its run attributes
alone (`reliability.run_store.run_records`). Prints its id, its new run and status as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ops.service import service
from ops.stack_outputs import queue_output, table_output
from ops.target import Target, run_tool
from reliability.declaration import Service
from reliability.errors import EntityNotFound, RerunRefused
from reliability.run_store import RunRecord, run_records
from reliability.sqs import SqsQueue
from reliability.workflow_runs import Reruns


def reruns(target: Target, declared: Service | None = None) -> Reruns[RunRecord]:
    """The reruns of the service's entity on the target's table and queue."""
    declared = declared or service()
    return Reruns(
        entity=declared.entity,
        store=run_records(
            client=target.client("dynamodb"),
            table_name=target.output(table_output(declared.entity.table)),
            entity=declared.entity,
        ),
        queue=SqsQueue(client=target.client("sqs"), queue_url=target.output(queue_output(declared.queue))),
    )


def main(argv: Sequence[str] | None = None, declared: Service | None = None) -> int:
    declared = declared or service()
    entity = declared.entity
    parser = argparse.ArgumentParser(prog="python -m ops.rerun", description=__doc__.splitlines()[0])
    parser.add_argument(entity.id_field, help=f"the {entity.name} whose run ended FAILED")
    args = parser.parse_args(argv)
    try:
        found = reruns(Target.resolve(), declared).start_next_run(getattr(args, entity.id_field))
    except (EntityNotFound, RerunRefused) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({entity.id_field: found.entity_id, "run": found.run, "status": found.status}))
    return 0


if __name__ == "__main__":
    run_tool(main)
