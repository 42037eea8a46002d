"""The shapes AWS hands a function and a function's answer hands back, written once for both
clouds (the local cloud: `localcloud.apigw`, `localcloud.lambdas`, `localcloud.pollers`; the
in-process simulator: `simulator`).

- `rest_proxy_event`: API Gateway's REST (payload format 1.0) proxy event;
- `sqs_record`: one record of the SQS event an event source mapping sends, from a ReceiveMessage
  message; `failed_ids`: which records a `ReportBatchItemFailures` answer leaves on the queue;
- `error_payload`: a failed invocation's payload (`errorType` is what Retry/Catch match);
- `EXIT_ERROR` / `TIMED_OUT`: the error types Lambda reports for a sandbox that died and one that
  ran out of time (never the process's last exception).

The worker processes' own runtime (`lab/src/emulator/lambda_runtime.py`) runs isolated (`python -I`) and
imports nothing from the project, so it writes its error dict itself, in this shape.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

EXIT_ERROR = "Runtime.ExitError"
TIMED_OUT = "Sandbox.Timedout"


def error_payload(error_type: str, message: str) -> str:
    return json.dumps({"errorType": error_type, "errorMessage": message, "stackTrace": []})


def rest_proxy_event(
    *,
    method: str,
    path: str,
    resource_path: str,
    resource_id: str,
    headers: Iterable[tuple[str, str]],
    query: Mapping[str, list[str]],
    path_parameters: Mapping[str, str],
    body: str | None,
    is_base64: bool,
    stage: str,
    api_id: str,
    account_id: str,
    request_id: str,
    host: str,
    source_ip: str,
    user_agent: str | None,
    user_arn: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The REST API proxy event for one request (`path` without the stage; headers in order, a
    repeated name keeps its last value in `headers` and every value in `multiValueHeaders`).
    `user_arn`: the IAM principal that signed it, as API Gateway writes it on an IAM method."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value
        multi.setdefault(name, []).append(value)
    now = time.time() if now is None else now
    return {
        "resource": resource_path,
        "path": path,
        "httpMethod": method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": dict(query) or None,
        "pathParameters": dict(path_parameters) or None,
        "stageVariables": None,
        "requestContext": {
            "resourceId": resource_id,
            "resourcePath": resource_path,
            "httpMethod": method,
            "extendedRequestId": request_id[:16],
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "path": f"/{stage}{path}",
            "accountId": account_id,
            "protocol": "HTTP/1.1",
            "stage": stage,
            "domainPrefix": host.split(".", maxsplit=1)[0].split(":", maxsplit=1)[0],
            "requestTimeEpoch": int(now * 1000),
            "requestId": request_id,
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "sourceIp": source_ip,
                "principalOrgId": None,
                "accessKey": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": user_arn,
                "userAgent": user_agent,
                "user": None,
            },
            "domainName": host,
            "apiId": api_id,
        },
        "body": body,
        "isBase64Encoded": is_base64,
    }


# The attributes Lambda puts on each record (plus the FIFO ones when present).
RECORD_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "DeadLetterQueueSourceArn",
)


def _message_attributes(message: dict[str, Any]) -> dict[str, Any]:
    records = {}
    for name, value in (message.get("MessageAttributes") or {}).items():
        binary = value.get("BinaryValue")
        records[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode("ascii") if binary is not None else None,
            "stringListValues": list(value.get("StringListValues") or []),
            "binaryListValues": [
                base64.b64encode(item).decode("ascii") for item in value.get("BinaryListValues") or []
            ],
            "dataType": value.get("DataType"),
        }
    return records


def sqs_record(message: dict[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the SQS event Lambda sends, from a ReceiveMessage result."""
    attributes = message.get("Attributes") or {}
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {key: attributes[key] for key in RECORD_ATTRIBUTES if key in attributes},
        "messageAttributes": _message_attributes(message),
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if message.get("MD5OfMessageAttributes"):
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def failed_ids(payload: Any, batch_ids: set[str]) -> set[str] | None:
    """The message ids a ReportBatchItemFailures response marks failed; None = the whole batch.

    As Lambda: no response, an empty list or no `batchItemFailures` key means all succeeded; an
    entry without a valid `itemIdentifier` (missing, empty, not in the batch) fails the batch.
    """
    if not isinstance(payload, dict):
        return set()
    failures = payload.get("batchItemFailures")
    if not failures:
        return set()
    if not isinstance(failures, list):
        return None
    ids = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in batch_ids:
            return None
        ids.add(identifier)
    return ids
