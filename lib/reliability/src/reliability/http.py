"""HTTP idempotency (IETF draft-ietf-httpapi-idempotency-key-header-07) on Powertools' idempotency utility.

Powertools does the storage (``DynamoDBPersistenceLayer``: one conditional put as the lock,
ALL_OLD on conflict, in-progress expiry from the Lambda context, payload hash validation,
deletion on exception). This module adds the HTTP contract around it:

- the ``Idempotency-Key`` (matched case-insensitively) is an RFC 8941 sf-string (``"..."``) or the
  same characters bare; missing or empty -> 400 ``IdempotencyKeyMissing``; not printable ASCII, not
  a valid sf-string, longer than 255 characters, or two header lines with different keys -> 400
  ``IdempotencyKeyInvalid``;
- same key + same JSON payload -> the stored response (status, body, headers) with
  ``Idempotent-Replayed: true`` (a Powertools ``response_hook``);
- same key + different payload -> 422 (Powertools validates on the ALL_OLD fast path too;
  tested);
- same key while the first is in progress -> 409 with ``Retry-After``;
- an exception from ``execute`` stores nothing (Powertools deletes the record) and propagates
  intact; a response with status >= 400 stores nothing either;
- the key is parsed, validated and scoped to stage, route and CALLER once (``checked_key``:
  ``scoped_key`` = ``derive_key("http", stage, {route, key, caller})``), and ``handle`` takes that
  ``Key``; the Powertools record id is ``http#<sha256 of the key's value>`` (the value already
  names stage, route and caller). The caller is the request's authenticated identity
  (``caller_of``), so two callers who pick the same key never meet: neither is told the other's
  key is in use (no 422/409 across callers) nor replayed the other's answer (the draft's security
  considerations: combine the key with client-specific attributes);
- the in-progress record expires with the invocation (``register_lambda_context``);
- the lock write is safe for the SDK to retry (``RetrySafeLockWrites``): a request is never
  answered 409 because its own first attempt at the lock had landed.

We hand Powertools an already-parsed payload (``{"key": ..., "payload": ...}``) with plain
JMESPath expressions, so neither ``powertools_json(body)`` in payload validation (Powertools
issue #8473) nor JSON whitespace/key order can affect the hash (Powertools hashes with
``sort_keys=True``).

Thread-safety: the persistence layer keeps per-call state (as in Powertools); use one
``HttpIdempotency`` per concurrently running invocation (Lambda runs one at a time).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
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

from reliability.calltoken import ATTEMPT_ATTRIBUTE, with_attempt  # the lock write's own token
from reliability.errors import KEY_REUSED, StoreError, store_error
from reliability.keys import Key, derive_key
from reliability.telemetry import Decision, Telemetry

HEADER = "Idempotency-Key"
ANONYMOUS = "anonymous"  # the one caller of a stage without API authorization (the local cloud)
RECORD_PREFIX = "http"  # Powertools' record id: `http#<sha256>` of the scoped key's value
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


def caller_of(request_context: Mapping[str, Any] | None) -> str:
    """The authenticated caller of an API Gateway REST request, as a stable string.

    - an authorizer's subject where one is configured (Cognito's `claims.sub`, a Lambda
      authorizer's `principalId`): `sub:<subject>`;
    - else the IAM principal that signed the request (`identity.userArn`), with an assumed role's
      session name dropped (`arn:aws:sts::<account>:assumed-role/<role>`): a service's every
      instance and every fresh session of its role is one caller, so a retry from a new container
      still finds its key;
    - else `ANONYMOUS`: a stage without authorization has one caller (API Gateway refuses an
      unsigned request before the function on every IAM stage).
    Only what API Gateway itself writes into the request context is read, never a header.
    """
    context = request_context or {}
    authorizer = context.get("authorizer") or {}
    claims = authorizer.get("claims") or {}
    subject = claims.get("sub") or authorizer.get("principalId")
    if subject:
        return f"sub:{subject}"
    arn = (context.get("identity") or {}).get("userArn")
    if arn:
        parts = arn.split(":", 5)
        if len(parts) == 6 and parts[2] == "sts" and parts[5].startswith("assumed-role/"):
            role = parts[5].split("/")[1]
            return ":".join([*parts[:5], f"assumed-role/{role}"])
        return str(arn)
    return ANONYMOUS


def scoped_key(*, stage: str, route: str, raw_key: str, caller: str) -> Key:
    """The stored key of a caller's Idempotency-Key on ``route`` in ``stage`` (the one layout:
    the API, `make story KEY=` and `make idem-show KEY=` all derive it here)."""
    return derive_key("http", stage=stage, identity={"route": route, "caller": caller, "key": raw_key})


class _NotStored(Exception):
    """Carries a response that must not be stored (status >= 400) out through Powertools."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__(response.status)
        self.response = response


Headers = Mapping[str, str] | Mapping[str, Sequence[str]]
"""A request's headers: one value per name (`headers`) or every value (`multiValueHeaders`)."""


def header_values(headers: Headers | None, name: str) -> list[str]:
    """Every value of a header, matched case-insensitively (clients and proxies lowercase names)."""
    wanted = name.lower()
    values: list[str] = []
    for key, value in (headers or {}).items():
        if key.lower() == wanted:
            values += [value] if isinstance(value, str) else list(value)
    return values


def header_value(headers: Headers | None, name: str) -> str | None:
    """The last value of a header (as API Gateway's single-value `headers` has it), or None."""
    values = header_values(headers, name)
    return values[-1] if values else None


class KeyRejected(Exception):
    """An Idempotency-Key header the contract refuses; `code` and `reason` say how."""

    def __init__(self, code: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


_SF_STRING = re.compile(r'"((?:[ !#-\[\]-~]|\\["\\])*)"')
# The bare form: visible ASCII and space, without the characters that make the quoted form
# (`"`, `\`) and without `,`, the separator a proxy puts between two header lines it joins.
_BARE = re.compile(r"[ !#-+\--\[\]-~]+")


def _decode_key(value: str) -> str:
    """One header line's key: an RFC 8941 sf-string (`"..."` with `\"` and `\\` escapes), as the
    draft defines it, or the same characters bare (what most clients send)."""
    text = value.strip(" \t")
    if not text:
        return ""
    if text.startswith('"'):
        quoted = _SF_STRING.fullmatch(text)
        if quoted is None:
            raise KeyRejected(
                "IdempotencyKeyInvalid", "not-sf-string", f"{HEADER} is not a valid structured-field string"
            )
        return re.sub(r"\\(.)", r"\1", quoted.group(1))
    if _BARE.fullmatch(text) is None:
        raise KeyRejected(
            "IdempotencyKeyInvalid",
            "not-printable",
            f'{HEADER} must be printable ASCII (bare, without `"`, `\\` or `,`; or a quoted string)',
        )
    return text


def idempotency_key(headers: Headers | None) -> str | None:
    """The Idempotency-Key of a request: None when absent; raises `KeyRejected` for any value the
    contract refuses (empty, not printable ASCII, not a valid sf-string, longer than 255 characters,
    or several header lines with different keys). A quoted key and the same key bare are one key."""
    values = header_values(headers, HEADER)
    if not values:
        return None
    keys = {_decode_key(value) for value in values}
    if len(keys) > 1:
        raise KeyRejected(
            "IdempotencyKeyInvalid", "several-keys", f"send one {HEADER}; this request carries {len(keys)}"
        )
    key = keys.pop()
    if not key.strip():
        raise KeyRejected("IdempotencyKeyMissing", "missing", f"the {HEADER} header is empty")
    if len(key) > MAX_KEY_CHARS:
        raise KeyRejected(
            "IdempotencyKeyInvalid", "too-long", f"{HEADER} is longer than {MAX_KEY_CHARS} characters"
        )
    return key


def canonical_payload(payload: Any) -> Any:
    """A JSON string body is parsed, so whitespace and key order do not change the hash."""
    if isinstance(payload, bytes | bytearray):
        payload = payload.decode()
    if isinstance(payload, str):
        try:
            return json.loads(payload) if payload.strip() else None
        except (ValueError, RecursionError):  # not JSON (or too deep, too long a number): hash as text
            return payload
    return payload


class RetrySafeLockWrites:
    """Powertools' DynamoDB client, with the lock write made safe for the SDK to retry.

    Powertools takes the lock with one conditional PutItem (the key absent or expired). botocore
    retries a call after a timeout or a 5xx, and when the first attempt had landed, the retry
    finds the record that attempt wrote, fails its condition, and Powertools reads the request's
    own lock as another request's: 409 to a key's first request (`make load` met it at the
    functions' 5 s read timeout). Here each PutItem carries a token of its own, the same in every
    SDK attempt of the call, and its condition also passes where the record holds that token, so
    a retry rewrites its own record. Another request with the key has another token and still
    finds the lock held. Every other call goes to the client unchanged.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_item(self, **params: Any) -> Any:
        token = {"S": uuid.uuid4().hex}
        return self._client.put_item(
            **{
                **params,
                "Item": {**params["Item"], ATTEMPT_ATTRIBUTE: token},
                "ConditionExpression": with_attempt(params["ConditionExpression"]),
                "ExpressionAttributeNames": {
                    **params["ExpressionAttributeNames"],
                    "#attempt": ATTEMPT_ATTRIBUTE,
                },
                "ExpressionAttributeValues": {**params["ExpressionAttributeValues"], ":attempt": token},
            }
        )


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
        """`persistence`'s client is wrapped in `RetrySafeLockWrites` (once)."""
        if not isinstance(persistence.client, RetrySafeLockWrites):
            persistence.client = RetrySafeLockWrites(persistence.client)
        self._persistence = persistence
        self._stage = stage
        self._ttl = ttl_seconds
        self._telemetry = telemetry
        self._retry_after = retry_after_seconds
        self._store_status = store_status

    def checked_key(self, *, route: str, caller: str, headers: Headers | None) -> Key | HttpResponse:
        """The request's key scoped to this stage, ``route`` and ``caller`` (`caller_of`), or the
        400 the contract answers for a missing or refused Idempotency-Key (check it before parsing
        the body, so a request with no key and a bad body is told about the key first, as API
        Gateway's validation does)."""
        try:
            raw = idempotency_key(headers)
        except KeyRejected as rejected:
            self._telemetry.decision(Decision.KEY_REJECTED, step=route, reason=rejected.reason)
            return error_response(400, rejected.code, str(rejected))
        if raw is None:
            self._telemetry.decision(Decision.KEY_REJECTED, step=route, reason="missing")
            return error_response(400, "IdempotencyKeyMissing", f"the {HEADER} header is required")
        return scoped_key(stage=self._stage, route=route, raw_key=raw, caller=caller)

    def handle(
        self,
        *,
        route: str,
        key: Key,
        payload: Any,
        lambda_context: Any,
        execute: Callable[[], HttpResponse],
    ) -> HttpResponse:
        """Run ``execute`` once per ``key`` (from ``checked_key``) and payload; see the module doc."""
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

        def execute_and_store(request: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001 - hashed by Powertools
            response = execute()
            if not self._store_status(response.status):
                raise _NotStored(response)
            return response.to_dict()

        # Applied as a call, with the type it keeps: Powertools annotates the decorator `-> Any`.
        run: Callable[..., dict[str, Any]] = idempotent_function(
            execute_and_store,
            data_keyword_argument="request",
            persistence_store=self._persistence,
            config=config,
            key_prefix=RECORD_PREFIX,
        )

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
            return error_response(422, KEY_REUSED, f"this {HEADER} was already used with a different payload")
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
    "ANONYMOUS",
    "ATTEMPT_ATTRIBUTE",
    "HEADER",
    "MAX_KEY_CHARS",
    "RECORD_PREFIX",
    "REPLAYED_HEADER",
    "Headers",
    "HttpIdempotency",
    "HttpResponse",
    "KeyRejected",
    "RetrySafeLockWrites",
    "caller_of",
    "canonical_payload",
    "error_response",
    "header_value",
    "header_values",
    "idempotency_key",
    "scoped_key",
    "with_attempt",
]
