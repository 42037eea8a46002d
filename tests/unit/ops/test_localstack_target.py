"""A stage deployed to LocalStack, as the ops tools and the end-to-end suite reach it (no engine needed:
a stdlib HTTP server on 127.0.0.1 stands in for the emulator's endpoint and records what it receives)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ops.api_client import ApiClient, api_via_endpoint
from ops.target import Target, outputs_file
from tests.e2e.conftest import deployed_target

API_URL = "https://abcd1234.execute-api.us-east-1.amazonaws.com/dev/"


@pytest.fixture
def endpoint() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """An HTTP server on 127.0.0.1 that answers 200 `{}` and records (path, headers) of each request."""
    seen: list[tuple[str, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, dict(self.headers)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def deployed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's outputs of stage dev on LocalStack, in a project directory of its own; no credentials
    or profile in the environment."""
    monkeypatch.chdir(tmp_path)
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
        "RETRYSAFE_TARGET",
        "AWS_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    path = outputs_file("localstack", "dev")
    path.parent.mkdir()
    outputs = {"retrysafe-dev-app": {"ApiUrl": API_URL}, "retrysafe-dev-data": {"InventoryTableName": "inv"}}
    path.write_text(json.dumps(outputs))
    return path


def test_an_api_url_on_an_emulator_goes_through_its_endpoint() -> None:
    endpoint = "http://127.0.0.1:4566"

    assert api_via_endpoint(API_URL, endpoint) == "http://127.0.0.1:4566/_aws/execute-api/abcd1234/dev/"
    assert (
        api_via_endpoint("http://abcd1234.execute-api.localhost:4566/dev/orders/o-1?x=1", endpoint + "/")
        == "http://127.0.0.1:4566/_aws/execute-api/abcd1234/dev/orders/o-1?x=1"
    )
    # anything else is left alone: a queue URL, a URL already on the endpoint
    queue = "http://127.0.0.1:4566/000000000000/retrysafe-dev-orders"
    assert api_via_endpoint(queue, endpoint) == queue
    path_form = "http://127.0.0.1:4566/_aws/execute-api/abcd1234/dev/"
    assert api_via_endpoint(path_form, endpoint) == path_form


def test_ops_tools_reach_localstack_with_its_conventions(
    deployed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given only AWS_ENDPOINT_URL, as the documented LocalStack steps set it (what `make seed` resolves)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")

    target = Target.resolve()

    # Then LocalStack's test credentials and default region, and the API through the endpoint
    assert (target.endpoint_url, target.region, target.credentials) == (
        "http://127.0.0.1:4566",
        "us-east-1",
        ("test", "test"),
    )
    assert target.client("dynamodb").meta.endpoint_url == "http://127.0.0.1:4566"
    assert target.session().get_credentials().access_key == "test"
    assert target.output("ApiUrl") == "http://127.0.0.1:4566/_aws/execute-api/abcd1234/dev/"
    assert target.output("InventoryTableName") == "inv"


def test_naming_localstack_never_reaches_aws(deployed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("RETRYSAFE_TARGET", "localstack")

    target = Target.resolve()

    assert target.endpoint_url == "http://localhost.localstack.cloud:4566"


def test_e2e_signs_requests_to_an_iam_api_on_localstack(
    deployed: Path, endpoint: tuple[str, list[tuple[str, dict[str, str]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given stage dev (api_auth IAM in cdk.json) deployed to an engine at `url`
    url, seen = endpoint
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)

    # When the end-to-end suite reaches it and follows a link the API answered with
    e2e = deployed_target("localstack", "dev")
    e2e.api.read("o-1")
    e2e.api.request("GET", "https://abcd1234.execute-api.localhost.localstack.cloud:4566/dev/orders/o-2")

    # Then each request is SigV4-signed for execute-api with the target's credentials (an engine
    # that enforces IAM answers 403 MissingAuthenticationToken otherwise) and goes through the endpoint
    assert [path for path, _ in seen] == [
        "/_aws/execute-api/abcd1234/dev/orders/o-1",
        "/_aws/execute-api/abcd1234/dev/orders/o-2",
    ]
    for _, headers in seen:
        authorization = headers.get("Authorization", "")
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=test/"), headers
        assert "/us-east-1/execute-api/aws4_request" in authorization


def test_an_api_without_iam_auth_is_not_signed(
    endpoint: tuple[str, list[tuple[str, dict[str, str]]]],
) -> None:
    url, seen = endpoint

    ApiClient(url + "/local/").read("o-1")

    assert "Authorization" not in seen[0][1]
