"""AWS list prices, written once: US East (N. Virginia), on-demand, no free tier, in US dollars.

`make scale` prices its scale sheet with these; `make bench` can price counted operations with
the same numbers. Check the pages named beside each before quoting a figure elsewhere; prices
change (DynamoDB's on-demand prices halved in November 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Price:
    dollars: float  # per `unit`
    unit: str
    source: str


_LAMBDA = "https://aws.amazon.com/lambda/pricing/"
_SFN = "https://aws.amazon.com/step-functions/pricing/"
_SQS = "https://aws.amazon.com/sqs/pricing/"
_DDB = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
_APIGW = "https://aws.amazon.com/api-gateway/pricing/"
_LOGS = "https://aws.amazon.com/cloudwatch/pricing/"

PRICES: dict[str, Price] = {
    "lambda_request": Price(dollars=0.20 / 1e6, unit="request", source=_LAMBDA),
    "lambda_gb_second_arm64": Price(dollars=0.0000133334, unit="GB-second", source=_LAMBDA),
    "sfn_standard_transition": Price(dollars=0.025 / 1000, unit="state transition", source=_SFN),
    "sfn_express_request": Price(dollars=1.00 / 1e6, unit="request", source=_SFN),
    "sfn_express_gb_second": Price(dollars=0.00001667, unit="GB-second", source=_SFN),
    "sqs_standard_request": Price(dollars=0.40 / 1e6, unit="request (64 KB chunk)", source=_SQS),
    "dynamodb_write_request_unit": Price(dollars=0.625 / 1e6, unit="write request unit", source=_DDB),
    "dynamodb_read_request_unit": Price(dollars=0.125 / 1e6, unit="read request unit", source=_DDB),
    "apigw_rest_request": Price(dollars=3.50 / 1e6, unit="request (first 333 million)", source=_APIGW),
    "logs_ingested_gb": Price(dollars=0.50, unit="GB ingested", source=_LOGS),
}


# How an Express execution's duration is billed (the same page): the memory it uses in 64 MB
# chunks, its duration rounded up to the next 100 ms.
SFN_EXPRESS_MEMORY_CHUNK_MB = 64
SFN_EXPRESS_DURATION_STEP_SECONDS = 0.1


def price(key: str) -> float:
    return PRICES[key].dollars


def express_billed_gb_seconds(seconds: float, memory_mb: float = 0.0) -> float:
    """The GB-seconds an Express execution of `seconds` using `memory_mb` is billed for (a small
    state is one 64 MB chunk)."""
    chunks = max(1, math.ceil(memory_mb / SFN_EXPRESS_MEMORY_CHUNK_MB))
    steps = max(1, math.ceil(round(seconds / SFN_EXPRESS_DURATION_STEP_SECONDS, 9)))
    return chunks * SFN_EXPRESS_MEMORY_CHUNK_MB / 1024 * steps * SFN_EXPRESS_DURATION_STEP_SECONDS
