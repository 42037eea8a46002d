"""The scale sheet: at 10, 100, 1,000 and 10,000 orders/s, which limit binds first, what to raise,
what an hour costs at list prices, and what changes in the design past each point.

Limits come from the synthesized topology (admission, the API stage throttle, the happy path's
states, memory sizes, batch sizes), the stage's capacity entry and infra.capacity.QUOTAS
(us-east-1 defaults); prices from ops.costs. An order's DynamoDB units, their busiest table's share
and its log bytes are what `make bench` measured through the handlers (bench/results/cost.json,
`bench.cost.measured_usage`); durations, which no template states, are written below.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.cost import measured_usage
from infra.capacity import TRANSACTIONAL_WRU_PER_ITEM, express_execution_seconds, worker_seconds_per_message
from ops.costs import express_billed_gb_seconds, price
from reliability.cdk.capacity import (
    PROVIDER_CALL_SECONDS,
    QUOTAS,
    STEP_SECONDS,
    WORKER_SECONDS_PER_MESSAGE,
    quota,
)
from reliability.cdk.config import WorkflowType
from scale.model import CONSUMERS, PROVIDER_STEPS, SERVICE
from scale.topology import Topology

RATES = (10, 100, 1_000, 10_000)
# The API function's time per request (HTTP idempotency record, order write, SendMessage).
API_SECONDS = 0.1


@dataclass(frozen=True)
class Limit:
    what: str
    orders_per_second: float
    raise_it: str  # the quota or setting to raise
    past_it: str  # what changes in the design past this point


def modelled_per_order(topology: Topology) -> dict[str, float]:
    """What one happy-path order uses that the templates say: invocations, GB-seconds,
    transitions (Standard) or an execution and its billed GB-seconds (Express), requests."""
    fns = topology.functions
    batch = {q.consumer: q.batch_size for q in topology.queues.values()}
    tasks = [f for f in (topology.task_function(s) for s in topology.happy_path()) if f]
    workflow = WorkflowType.EXPRESS if topology.express else WorkflowType.STANDARD
    seconds = {name: STEP_SECONDS for name in (*tasks, *CONSUMERS)} | {
        "api": API_SECONDS,
        # On Express the worker also waits for the execution (infra.capacity)
        "worker": worker_seconds_per_message(workflow),
        # a step that calls a provider lasts the provider's call
        **dict.fromkeys(PROVIDER_STEPS, PROVIDER_CALL_SECONDS),
    }
    invocations = {"api": 1.0} | {name: 1.0 for name in tasks} | {c: 1 / b for c, b in batch.items()}
    # A batch invocation lasts its records' times together: per order, each function adds its
    # time per record whatever the batch.
    gb_seconds = sum(fns[name].memory_mb / 1024 * seconds[name] for name in invocations)
    concurrency_seconds = sum(seconds[name] for name in invocations)
    return {
        "lambda_requests": sum(invocations.values()),
        "gb_seconds": gb_seconds,
        "concurrency_seconds": concurrency_seconds,
        "transitions": 0.0 if topology.express else float(len(topology.happy_path())),
        "express_requests": 1.0 if topology.express else 0.0,
        "express_gb_seconds": express_billed_gb_seconds(express_execution_seconds())
        if topology.express
        else 0.0,
        # each queue: SendMessage, then one ReceiveMessage and one DeleteMessageBatch per batch
        "sqs_requests": sum(1 + 2 / q.batch_size for q in topology.queues.values()),
        "api_requests": 1.0,
    }


def per_order(topology: Topology) -> dict[str, float]:
    """What one happy-path order uses: the modelled usage and `make bench`'s measured units and
    log bytes."""
    measured = measured_usage()
    return modelled_per_order(topology) | {
        "write_units": measured["write_units"],
        "read_units": measured["read_units"],
        "busiest_table_wru_share": measured["busiest_table_wru_share"],
        "log_gb": measured["log_bytes"] / 1e9,
    }


def cost_per_order(usage: dict[str, float]) -> dict[str, float]:
    return {
        "Step Functions": usage["transitions"] * price("sfn_standard_transition")
        + usage.get("express_requests", 0.0) * price("sfn_express_request")
        + usage.get("express_gb_seconds", 0.0) * price("sfn_express_gb_second"),
        "Lambda": usage["lambda_requests"] * price("lambda_request")
        + usage["gb_seconds"] * price("lambda_gb_second_arm64"),
        "API Gateway": usage["api_requests"] * price("apigw_rest_request"),
        "DynamoDB": usage["write_units"] * price("dynamodb_write_request_unit")
        + usage["read_units"] * price("dynamodb_read_request_unit"),
        "SQS": usage["sqs_requests"] * price("sqs_standard_request"),
        "CloudWatch Logs": usage["log_gb"] * price("logs_ingested_gb"),
    }


def limits(topology: Topology) -> list[Limit]:
    usage = per_order(topology)
    account = topology.capacity.account_concurrency
    return sorted(
        [
            Limit(
                f"provider rate limit ({', '.join(sorted(set(PROVIDER_STEPS.values())))})",
                topology.capacity.provider_requests_per_second,
                "the provider's account limit (Stripe: ask support), then cdk.json "
                "capacity.provider_requests_per_second",
                "several provider accounts or a provider that batches; the provider step's reserved "
                "concurrency follows the plan",
            ),
            Limit(
                "API stage throttle (cdk.json api_throttle.rate)",
                topology.api_rate,
                "cdk.json api_throttle (rate, burst)",
                "clients get 429 + Retry-After beyond it; the idempotency key makes their retries safe",
            ),
            Limit(
                "Step Functions StartExecution refill",
                quota("start_execution_refill_us_east_1"),
                QUOTAS["start_execution_refill_us_east_1"].name,
                "Express workflows for the saga (far higher start rates; the fences make "
                "Express's at-least-once runs safe, but Express has no redrive: the DLQ becomes the "
                "redrive path)",
            ),
            Limit(
                "DynamoDB hot key: the daily aggregate item",
                quota("dynamodb_partition_wcu") / TRANSACTIONAL_WRU_PER_ITEM,
                "nothing to raise: one item lives on one partition",
                "shard the counter (day#<date>#<n> for n in 0..N-1, summed on read)",
            ),
            Limit(
                "Step Functions state transitions",
                quota("state_transition_refill_us_east_1") / usage["transitions"],
                QUOTAS["state_transition_refill_us_east_1"].name,
                "fewer states per order (one task for the steps after the provider's) or an "
                "Express sub-workflow after the provider's step",
            ),
            Limit(
                "Lambda concurrency (the account)",
                account / usage["concurrency_seconds"],
                QUOTAS["lambda_concurrency"].name,
                "raise the account quota and account_concurrency in cdk.json; past ~10,000 split "
                "the service across accounts or regions",
            ),
            Limit(
                "DynamoDB table write throughput (the busiest table)",
                quota("dynamodb_table_wru") / (usage["write_units"] * usage["busiest_table_wru_share"]),
                QUOTAS["dynamodb_table_wru"].name,
                "warm throughput on the busiest tables before a launch; fewer writes per step",
            ),
            Limit(
                "API Gateway account throttle",
                quota("apigw_account_rps"),
                QUOTAS["apigw_account_rps"].name,
                "several regions behind latency routing; or an ingest path without API Gateway",
            ),
        ],
        key=lambda limit: limit.orders_per_second,
    )


def render(topology: Topology) -> str:
    usage = per_order(topology)
    costs = cost_per_order(usage)
    order_cost = sum(costs.values())
    all_limits = limits(topology)
    orders = topology.queues[SERVICE.queue]
    admission = (orders.max_concurrency or quota("esm_max_concurrency")) / WORKER_SECONDS_PER_MESSAGE
    lines = [
        f"# Scale sheet: stage `{topology.stage}`",
        "",
        "Generated by `make scale-sheet` (`python -m scale sheet`) from the synthesized templates, "
        "`infra/capacity.py` (AWS default quotas, us-east-1) and `lab/src/ops/costs.py` (list prices). "
        "Do not edit by hand.",
        "",
        f"Per happy-path order: {usage['transitions']:g} state transitions, "
        f"{usage['lambda_requests']:.1f} Lambda invocations, {usage['gb_seconds']:.3f} GB-s, "
        f"{usage['sqs_requests']:.1f} SQS requests, {usage['write_units']:g} DynamoDB write units "
        f"and {usage['log_gb'] * 1e6:.1f} KB of logs (`make bench`, bench/results/cost.json): "
        f"${order_cost * 1e6:,.0f} per million "
        "orders (" + ", ".join(f"{k} {v / order_cost:.0%}" for k, v in costs.items()) + ").",
        "",
        "## The plan in the templates (infra/capacity.py)",
        "",
        f"The worker admits at most {admission:,.0f} orders/s (ESM MaximumConcurrency "
        f"{orders.max_concurrency} x 1/{WORKER_SECONDS_PER_MESSAGE:g} s); the orders queue absorbs "
        "anything faster, so a burst waits in the queue instead of failing. Reserved concurrency: "
        + ", ".join(f"{f.name} {f.reserved}" for f in topology.functions.values() if f.reserved)
        + f"; maxReceiveCount {orders.max_receive_count}; visibility timeout "
        f"{orders.visibility_timeout} s. Raising any limit below means raising the stage's capacity "
        "entry in cdk.json too: the plan then derives the new settings.",
        "",
        "## Limits, tightest first (orders/s each allows)",
        "",
        "| limit | orders/s | raise | past it |",
        "| --- | ---: | --- | --- |",
    ]
    lines += [
        f"| {lim.what} | {lim.orders_per_second:,.0f} | {lim.raise_it} | {lim.past_it} |"
        for lim in all_limits
    ]
    lines += [
        "",
        "## At each rate",
        "",
        "| orders/s | binds first | raise (newly binding) | also binding | design change past it "
        "| cost per hour |",
        "| ---: | --- | --- | --- | --- | ---: |",
    ]
    previous = 0
    for rate in RATES:
        binding = [lim for lim in all_limits if lim.orders_per_second <= rate]
        # What changes past this point: every limit first crossed since the previous rate.
        new = [lim for lim in binding if lim.orders_per_second > previous]
        previous = rate
        if binding:
            cells = [
                binding[0].what,
                "; ".join(lim.raise_it for lim in new) or "-",
                ", ".join(lim.what for lim in binding[1:]) or "-",
                "; ".join(f"{lim.what}: {lim.past_it}" for lim in new) or "-",
            ]
        else:
            tightest = all_limits[0]
            use = f"{rate / tightest.orders_per_second:.0%}"
            cells = [f"nothing ({tightest.what} at {use})", "-", "-", "none needed"]
        lines.append(f"| {rate:,} | " + " | ".join(cells) + f" | ${rate * 3600 * order_cost:,.2f} |")
    lines += [
        "",
        "Each quota's source: "
        + "; ".join(sorted({f"[{q.source.rsplit('/', 1)[-1]}]({q.source})" for q in QUOTAS.values()}))
        + ". Step Functions' buckets are smaller outside us-east-1, us-west-2 and eu-west-1 "
        "(StartExecution 150/s, state transitions 800/s): the plan derives admission from those.",
        "",
    ]
    return "\n".join(lines)
