"""SQS event source mappings as Lambda runs them: pollers per enabled mapping.

Each poller receives up to the mapping's batch size with the queue's own visibility timeout,
invokes the function with an AWS-shaped SQS event and then deletes what succeeded:
everything on success, nothing on a function error, and all but the reported `itemIdentifier`s
when the mapping has `ReportBatchItemFailures`. Messages left undeleted come back after the
visibility timeout with a higher ApproximateReceiveCount, and moto's SQS moves them to the
queue's dead-letter queue on the receive after maxReceiveCount, as SQS does.

Everything goes through the public APIs of the local endpoint, like Lambda's pollers do.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError

from emulator.config import CONCURRENT_CALLS
from emulator.shapes import failed_ids, sqs_record

logger = logging.getLogger("localcloud.pollers")

# How often the manager looks for mappings created, enabled, disabled or deleted.
DISCOVERY_INTERVAL_SECONDS = 1.0
# Long-poll wait per receive, SQS's longest, as Lambda's pollers wait: a poll returns as soon as a
# message arrives, and an empty queue costs one request per poller per 20 s. (A 1 s wait cost an
# idle local cloud 13 % of a core in requests.) Stopping does not wait for a poll in flight.
RECEIVE_WAIT_SECONDS = 20
SQS_RECEIVE_MAX = 10
# Concurrent batches per mapping: Lambda starts an SQS mapping with five pollers (and scales up).
# One poller made the queue a serial line: the worker starts each entity's execution in turn, so
# under load one batch after the other capped the local cloud near 2.5 entities/s (the sample's orders).
POLLERS_PER_MAPPING = 5


def client_factory(endpoint: str, region: str) -> Callable[[str], Any]:
    """boto3 clients for the local endpoint; reads wait as long as the slowest function may run."""
    session = boto3.session.Session(
        aws_access_key_id="localcloud",
        aws_secret_access_key="localcloud",  # noqa: S106 - moto accepts any credentials
        region_name=region,
    )
    config = BotoConfig(
        read_timeout=960,
        connect_timeout=5,
        retries={"max_attempts": 0, "mode": "standard"},
        # One connection per concurrent caller (the REST API shares its client between requests);
        # botocore's default 10 opened and dropped a connection per call beyond that.
        max_pool_connections=CONCURRENT_CALLS,
    )
    lock = threading.Lock()

    def make(service: str) -> Any:
        with lock:  # boto3 sessions are not thread-safe while creating clients
            return session.client(service, endpoint_url=endpoint, config=config)

    return make


@dataclass(frozen=True)
class Mapping:
    uuid: str
    function_arn: str
    queue_arn: str
    batch_size: int
    report_batch_item_failures: bool

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Mapping:
        return cls(
            uuid=data["UUID"],
            function_arn=data["FunctionArn"],
            queue_arn=data["EventSourceArn"],
            batch_size=int(data.get("BatchSize") or 10),
            report_batch_item_failures="ReportBatchItemFailures" in (data.get("FunctionResponseTypes") or []),
        )


class SqsPoller:
    """Polls one queue for one mapping until stopped."""

    def __init__(self, mapping: Mapping, *, clients: Callable[[str], Any], region: str) -> None:
        self.mapping = mapping
        self._sqs = clients("sqs")
        self._lambda = clients("lambda")
        self._region = region
        self._stop = threading.Event()
        self._queue_url: str | None = None
        self._threads = [
            threading.Thread(target=self._run, name=f"poller-{mapping.uuid[:8]}-{n}", daemon=True)
            for n in range(POLLERS_PER_MAPPING)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _url(self) -> str:
        if self._queue_url is None:
            parts = self.mapping.queue_arn.split(":")
            self._queue_url = self._sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])[
                "QueueUrl"
            ]
        return self._queue_url

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except (BotoCoreError, ClientError) as exc:
                if self._stop.is_set():
                    return
                logger.warning("poller %s: %s", self.mapping.uuid, exc)
                self._stop.wait(1.0)

    def _receive(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        wait = RECEIVE_WAIT_SECONDS
        while len(messages) < self.mapping.batch_size:
            batch = self._sqs.receive_message(
                QueueUrl=self._url(),
                MaxNumberOfMessages=min(SQS_RECEIVE_MAX, self.mapping.batch_size - len(messages)),
                WaitTimeSeconds=wait,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            messages.extend(batch)
            if len(batch) < SQS_RECEIVE_MAX:
                break
            wait = 0
        return messages

    def poll_once(self) -> int:
        """Receive one batch, invoke, delete what succeeded; returns the batch size seen."""
        messages = self._receive()
        if not messages or self._stop.is_set():
            # Stopped during the long poll: leave the batch to come back after its visibility
            # timeout (the cloud may be gone, or another one may listen on its port now).
            return 0
        records = [sqs_record(m, queue_arn=self.mapping.queue_arn, region=self._region) for m in messages]
        response = self._lambda.invoke(
            FunctionName=self.mapping.function_arn,
            InvocationType="RequestResponse",
            Payload=json.dumps({"Records": records}).encode("utf-8"),
        )
        raw = response["Payload"].read()
        if response.get("FunctionError"):
            logger.info(
                "mapping %s: function error, %d message(s) return after the visibility timeout",
                self.mapping.uuid,
                len(messages),
            )
            return len(messages)
        failed: set[str] | None = set()
        if self.mapping.report_batch_item_failures:
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = None
            failed = failed_ids(payload, {m["MessageId"] for m in messages})
        if failed is None:
            return len(messages)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), SQS_RECEIVE_MAX):
            chunk = done[start : start + SQS_RECEIVE_MAX]
            self._sqs.delete_message_batch(
                QueueUrl=self._url(),
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
        return len(messages)


class PollerManager:
    """Keeps one poller running per enabled SQS event source mapping."""

    def __init__(self, *, endpoint: str, region: str) -> None:
        self._clients = client_factory(endpoint, region)
        self._region = region
        self._lambda = self._clients("lambda")
        self._pollers: dict[str, SqsPoller] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="poller-manager", daemon=True)

    def start(self) -> None:
        self.sync()
        self._thread.start()

    def mappings(self) -> list[Mapping]:
        found = []
        for page in self._lambda.get_paginator("list_event_source_mappings").paginate():
            for data in page.get("EventSourceMappings", []):
                if data.get("State", "Enabled") == "Enabled" and data["EventSourceArn"].startswith(
                    "arn:aws:sqs:"
                ):
                    found.append(Mapping.from_api(data))
        return found

    def sync(self) -> None:
        wanted = {mapping.uuid: mapping for mapping in self.mappings()}
        for uuid, poller in list(self._pollers.items()):
            if wanted.get(uuid) != poller.mapping:
                poller.stop()
                del self._pollers[uuid]
        for uuid, mapping in wanted.items():
            if uuid not in self._pollers:
                poller = SqsPoller(mapping, clients=self._clients, region=self._region)
                self._pollers[uuid] = poller
                poller.start()
                logger.info("polling %s for %s", mapping.queue_arn, mapping.function_arn)

    def active(self) -> list[Mapping]:
        return [poller.mapping for poller in self._pollers.values()]

    def _run(self) -> None:
        while not self._stop.wait(DISCOVERY_INTERVAL_SECONDS):
            try:
                self.sync()
            except (BotoCoreError, ClientError) as exc:
                logger.warning("event source mapping discovery failed: %s", exc)

    def stop(self) -> None:
        """Stop polling; a poll in flight ends on its own (daemon threads) and invokes nothing."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for poller in self._pollers.values():
            poller.stop()
        self._pollers.clear()
