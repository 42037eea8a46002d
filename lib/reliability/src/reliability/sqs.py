"""A queue on SQS (implements `reliability.workflow_runs.Queue`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reliability.errors import transient_errors


class SqsQueue:
    """One JSON message per call (keys sorted: the same body is the same bytes)."""

    def __init__(self, *, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    def send(self, body: Mapping[str, Any]) -> str:
        with transient_errors("send message"):
            response = self._client.send_message(
                QueueUrl=self._url, MessageBody=json.dumps(body, sort_keys=True)
            )
        return str(response["MessageId"])
