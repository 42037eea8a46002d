"""A small HTTP client for the service's API, as any client would use it (the demo and e2e use it):
`create` posts to the declaration's starting route, `read` gets one entity by its route.

    api = ApiClient(target.output("ApiUrl"))                       # the local cloud (auth NONE)
    api = ApiClient(url, sign_with=boto3.Session(), region="eu-west-1")  # a real stage (IAM auth)
    api = ApiClient(url, sign_with=session, endpoint="http://127.0.0.1:4566")  # LocalStack (IAM auth)
    response = api.create({"customer_id": ..., "items": [...]}, key="k-1")
    response.status, response.json, response.header("Idempotent-Replayed")

Only the standard library plus botocore's SigV4 signer; never an import of handler code.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ops.outcomes import entity_route, id_field, starting_route
from ops.service import service

DEFAULT_TIMEOUT_SECONDS = 60.0
# API Gateway's own host names: `<api id>.execute-api.<region>.amazonaws.com` on AWS; an emulator
# answers its own (`<api id>.execute-api.localhost.localstack.cloud:4566`, ...).
_EXECUTE_API_HOST = re.compile(r"^(?P<api>[a-z0-9]+)\.execute-api\.")
# LocalStack's path form of an API's URL, which needs no DNS (MiniStack serves it too).
EMULATOR_API_PATH = "/_aws/execute-api/"


def api_via_endpoint(url: str, endpoint: str) -> str:
    """An API Gateway URL as an emulator at `endpoint` serves it, else `url` unchanged.

    `https://<id>.execute-api.<domain>/<stage>/<path>` -> `<endpoint>/_aws/execute-api/<id>/<stage>/<path>`.
    An emulator's stack outputs and its API's own links name execute-api hosts (often AWS's
    `amazonaws.com`, as CloudFormation's `AWS::URLSuffix` answers) that do not resolve to it.
    """
    parts = urlsplit(url)
    match = _EXECUTE_API_HOST.match(parts.hostname or "")
    if match is None:
        return url
    query = f"?{parts.query}" if parts.query else ""
    return f"{endpoint.rstrip('/')}{EMULATOR_API_PATH}{match['api']}{parts.path or '/'}{query}"


@dataclass(frozen=True)
class ApiResponse:
    status: int
    headers: dict[str, str]
    text: str
    _json: Any = field(default=None, repr=False)

    @property
    def json(self) -> Any:
        """The decoded body (None when it is not JSON)."""
        return self._json

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((value for key, value in self.headers.items() if key.lower() == lowered), None)


class ApiClient:
    """Requests against the API's base URL (`.../<stage>/`), SigV4-signed when given a session;
    on an emulator (`endpoint`), absolute API URLs (an answer's links) go through its endpoint."""

    def __init__(
        self,
        base_url: str,
        *,
        sign_with: Any = None,
        region: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        endpoint: str | None = None,
    ) -> None:
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._session = sign_with
        self._region = region
        self._timeout = timeout
        self._endpoint = endpoint

    def request(
        self,
        method: str,
        path: str,
        *,
        body: str | bytes | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        url = path if path.startswith(("http://", "https://")) else self.base_url + path.lstrip("/")
        if self._endpoint:
            url = api_via_endpoint(url, self._endpoint)
        data: bytes | None
        if isinstance(body, dict):
            data = json.dumps(body).encode("utf-8")
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = body
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers.setdefault("Content-Type", "application/json")
        if self._session is not None:
            all_headers = self._signed(method, url, data, all_headers)
        request = urllib.request.Request(url, data=data, headers=all_headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                return _response(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return _response(error.code, dict(error.headers), error.read())

    def create(self, body: dict[str, Any] | str, *, key: str | None) -> ApiResponse:
        """`POST` to the declaration's starting route (`ops.outcomes.starting_route`) with
        `Idempotency-Key: key` (no header when key is None)."""
        headers = {"Idempotency-Key": key} if key is not None else {}
        return self.request("POST", starting_route(service()).path.lstrip("/"), body=body, headers=headers)

    def read(self, entity_id: str) -> ApiResponse:
        """`GET` of one entity by the declaration's route that reads it (`ops.outcomes.entity_route`)."""
        declared = service()
        route = entity_route(declared)
        if route is None:
            raise LookupError(f"{declared.name!r} declares no GET route of one {declared.entity.name}")
        path = route.path.replace("{" + id_field(declared) + "}", entity_id)
        return self.request("GET", path.lstrip("/"))

    def _signed(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        """SigV4 for `execute-api` (an API with IAM authorization)."""
        from botocore.auth import SigV4Auth  # noqa: PLC0415 - only for signed targets
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415

        credentials = self._session.get_credentials()
        if credentials is None:
            raise RuntimeError("no AWS credentials to sign the API request with")
        region = self._region or self._session.region_name or "us-east-1"
        aws_request = AWSRequest(method=method, url=url, data=data or b"", headers=headers)
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(aws_request)
        return dict(aws_request.headers.items())


def _response(status: int, headers: dict[str, str], raw: bytes) -> ApiResponse:
    text = raw.decode("utf-8", "replace")
    try:
        decoded = json.loads(text) if text else None
    except ValueError:
        decoded = None
    return ApiResponse(status=status, headers=headers, text=text, _json=decoded)
