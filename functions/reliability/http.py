"""HTTP idempotency (IETF draft-ietf-httpapi-idempotency-key-header-07) on Powertools' idempotency utility.

Powertools does the storage (``DynamoDBPersistenceLayer``: one conditional put as the lock,
ALL_OLD on conflict, in-progress expiry from the Lambda context, payload hash validation,
deletion on exception). This module adds the HTTP contract around it:

- missing, empty or over-long (> 255) ``Idempotency-Key`` (matched case-insensitively) -> 400;
- same key + same JSON payload -> the stored response (status, body, headers) with
  ``Idempotent-Replayed: true`` (a Powertools ``response_hook``);
- same key + different payload -> 422 (Powertools validates on the ALL_OLD fast path too;
  tested);
- same key while the first is in progress -> 409 with ``Retry-After``;
- an exception from ``execute`` stores nothing (Powertools deletes the record) and propagates
  intact; a response with status >= 400 stores nothing either;
- the key is scoped to stage and route (``derive_key("http", stage, {route, key})``);
- the in-progress record expires with the invocation (``register_lambda_context``).

We hand Powertools an already-parsed payload (``{"key": ..., "payload": ...}``) with plain
JMESPath expressions, so neither ``powertools_json(body)`` in payload validation (Powertools
issue #8473) nor JSON whitespace/key order can affect the hash (Powertools hashes with
``sort_keys=True``).

Thread-safety: the persistence layer keeps per-call state (as in Powertools); use one
``HttpIdempotency`` per concurrently running invocation (Lambda runs one at a time).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from reliability.errors import StoreError, store_error
from reliability.keys import Key, derive_key
from reliability.telemetry import Decision, Telemetry

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_CHARS = 255


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "body": self.body, "headers": dict(self.headers)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HttpResponse:
        return cls(
            status=int(data["status"]), body=dict(data["body"]), headers=dict(data.get("headers") or {})
        )


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> HttpResponse:
    """The service's one error body shape: `{"error": <code>, "message": <what is wrong>}`."""
    return HttpResponse(status=status, body={"error": code, "message": message}, headers=dict(headers or {}))


class _NotStored(Exception):
    """Carries a response that must not be stored (status >= 400) out through Powertools."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__(response.status)
        self.response = response


def header_value(headers: Mapping[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup (clients and proxies lowercase header names)."""
    if not headers:
        return None
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def idempotency_key(headers: Mapping[str, str] | None) -> str | None:
    """The Idempotency-Key value. The draft defines it as a Structured Field string
    (``Idempotency-Key: "8e03978e-..."``); a quoted value and the bare value are the same key."""
    raw = header_value(headers, HEADER)
    if raw is None:
        return None
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def canonical_payload(payload: Any) -> Any:
    """A JSON string body is parsed, so whitespace and key order do not change the hash."""
    if isinstance(payload, bytes | bytearray):
        payload = payload.decode()
    if isinstance(payload, str):
        try:
            return json.loads(payload) if payload.strip() else None
        except json.JSONDecodeError:
            return payload
    return payload


class HttpIdempotency:
    def __init__(
        self,
        *,
        persistence: DynamoDBPersistenceLayer,
        stage: str,
        ttl_seconds: int,
        telemetry: Telemetry,
        retry_after_seconds: int = 1,
        store_status: Callable[[int], bool] = lambda status: status < 400,
    ) -> None:
        self._persistence = persistence
        self._stage = stage
        self._ttl = ttl_seconds
        self._telemetry = telemetry
        self._retry_after = retry_after_seconds
        self._store_status = store_status

    def scoped_key(self, *, route: str, raw_key: str) -> Key:
        """The stored key for a client's Idempotency-Key on ``route`` in this stage."""
        return derive_key("http", stage=self._stage, identity={"route": route, "key": raw_key})

    def request_key(self, *, route: str, headers: Mapping[str, str] | None) -> Key | None:
        """The scoped key of a request, or None when its header is missing or invalid."""
        raw = idempotency_key(headers)
        if raw is None or not raw.strip() or len(raw) > MAX_KEY_CHARS:
            return None
        return self.scoped_key(route=route, raw_key=raw)

    def handle(
        self,
        *,
        route: str,
        headers: Mapping[str, str] | None,
        payload: Any,
        lambda_context: Any,
        execute: Callable[[], HttpResponse],
    ) -> HttpResponse:
        raw = idempotency_key(headers)
        if raw is None or not raw.strip():
            self._telemetry.decision(Decision.KEY_REJECTED, step=route, reason="missing")
            return error_response(400, "IdempotencyKeyMissing", f"the {HEADER} header is required")
        if len(raw) > MAX_KEY_CHARS:
            self._telemetry.decision(Decision.KEY_REJECTED, step=route, reason="too-long")
            return error_response(
                400, "IdempotencyKeyInvalid", f"{HEADER} is longer than {MAX_KEY_CHARS} characters"
            )
        key = self.scoped_key(route=route, raw_key=raw)
        replayed: list[bool] = []

        def on_replay(response: Any, idempotent_data: DataRecord) -> Any:  # noqa: ARG001 - Powertools hook signature
            replayed.append(True)
            stored = HttpResponse.from_dict(response)
            return HttpResponse(
                stored.status, stored.body, {**stored.headers, REPLAYED_HEADER: "true"}
            ).to_dict()

        config = IdempotencyConfig(
            event_key_jmespath="key",
            payload_validation_jmespath="payload",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=self._ttl,
            hash_function="sha256",
            response_hook=on_replay,
        )
        if lambda_context is not None:
            config.register_lambda_context(lambda_context)

        @idempotent_function(
            data_keyword_argument="request",
            persistence_store=self._persistence,
            config=config,
            key_prefix=f"http#{self._stage}#{route}",
        )
        def run(request: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001 - hashed by Powertools
            response = execute()
            if not self._store_status(response.status):
                raise _NotStored(response)
            return response.to_dict()

        fields = {"key": key.value, "step": route, "label": key.label}
        try:
            result = run(request={"key": key.value, "payload": canonical_payload(payload)})
        except _NotStored as not_stored:
            self._telemetry.decision(
                Decision.EXECUTED, stored=False, status=not_stored.response.status, **fields
            )
            return not_stored.response
        except IdempotencyValidationError:
            self._telemetry.decision(Decision.PAYLOAD_MISMATCH, **fields)
            return error_response(
                422, "IdempotencyKeyReused", f"this {HEADER} was already used with a different payload"
            )
        except (IdempotencyAlreadyInProgressError, IdempotencyInconsistentStateError):
            self._telemetry.decision(Decision.IN_PROGRESS_CONFLICT, **fields)
            return error_response(
                409,
                "RequestInProgress",
                f"a request with this {HEADER} is still being processed",
                {"Retry-After": str(self._retry_after)},
            )
        except IdempotencyPersistenceLayerError as error:
            cause = error.__cause__
            raise (store_error(cause) if isinstance(cause, Exception) else StoreError(str(error))) from error
        response = HttpResponse.from_dict(result)
        if replayed:
            self._telemetry.decision(Decision.REPLAYED, status=response.status, **fields)
        else:
            self._telemetry.decision(Decision.EXECUTED, stored=True, status=response.status, **fields)
        return response


__all__ = [
    "HEADER",
    "MAX_KEY_CHARS",
    "REPLAYED_HEADER",
    "HttpIdempotency",
    "HttpResponse",
    "canonical_payload",
    "error_response",
    "header_value",
    "idempotency_key",
]
