"""Start run N+1 of an order whose run N ended FAILED: `python -m ops.rerun ORDER_ID`, `make rerun ORDER=...`.

Runs are an operator's decision, made through one guarded transition on the order (run == N and
status FAILED -> run N+1, ACCEPTED; `orders.runs.Reruns`), then the order's message. The worker
starts only the order's current run, so a hand-made run-N+1 message can never start anything,
and run N+1 gets new keys everywhere (tokens, fences, the provider's idempotency key).
Refused, with the order's status and run, unless the current run ended FAILED. Asked again after
a crash between the transition and the send, it only sends the message again.
Prints the order id, its new run and status as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ops.service import service
from ops.target import Target
from orders.adapters.aws import SqsQueue
from orders.adapters.order_store import DynamoOrderStore
from orders.domain import Order
from orders.errors import RerunRefused
from orders.runs import Reruns
from reliability.errors import EntityNotFound


def reruns(target: Target) -> Reruns[Order]:
    return Reruns(
        entity=service().entity,
        store=DynamoOrderStore(client=target.client("dynamodb"), table_name=target.output("OrdersTableName")),
        queue=SqsQueue(client=target.client("sqs"), queue_url=target.output("OrdersQueueUrl")),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.rerun", description=__doc__.splitlines()[0])
    parser.add_argument("order_id", help="the order whose run ended FAILED")
    args = parser.parse_args(argv)
    try:
        order = reruns(Target.resolve()).start_next_run(args.order_id)
    except (EntityNotFound, RerunRefused) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"order_id": order.order_id, "run": order.run, "status": order.status.value}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
