"""The HTTP side of a local REST API: one threaded server per API on a 127.0.0.1 port, turning
sockets into `HttpRequest`s for `localcloud.apigw.RestApiHandler` (http.server's own refusals in
the API's gateway response shape).
"""

from __future__ import annotations

import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from localcloud.apigw import HttpRequest, HttpResponse, RestApiHandler

logger = logging.getLogger("localcloud.apigw_server")


MAX_BODY_BYTES = 10 * 1024 * 1024
# Connections the kernel queues before the server accepts them. http.server's default is 5, so a
# burst of 20 clients opening connections at once got resets; werkzeug's 128 (the AWS endpoint's).
LISTEN_BACKLOG = 128


class _ApiHttpServer(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True


class _Request(BaseHTTPRequestHandler):
    """One request to a RestApiServer; each server subclasses it with its `rest` handler and
    `endpoint` (the stage's own `host:port`, never the client's Host header)."""

    protocol_version = "HTTP/1.1"
    rest: RestApiHandler
    endpoint: str

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def __getattr__(self, name: str) -> Any:
        # Any method name reaches _serve (http.server answers an unknown one with its own
        # HTML 501); the routes decide, as API Gateway does.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def send_error(
        self,
        code: int,
        message: str | None = None,
        explain: str | None = None,  # noqa: ARG002 - http.server's signature
    ) -> None:
        """http.server's own refusals (malformed request line, headers too long) in the
        API's gateway response shape instead of an HTML page."""
        self.close_connection = True
        self._answer(self.rest.refusal(code, message or HTTPStatus(code).phrase))

    def _answer(self, response: HttpResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._answer(self.rest.refusal(400, "Invalid Content-Length"))
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            self._answer(self.rest.too_large())
            return
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        request = HttpRequest(
            method=self.command,
            path=url.path,
            query=url.query,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            host=self.endpoint,
        )
        try:
            response = self.rest.handle(request)
        except Exception:  # one broken request must not stop the API
            logger.exception("request %s %s failed", self.command, self.path)
            response = self.rest.failure()
        self._answer(response)


class RestApiServer:
    """One REST API on one 127.0.0.1 port, served by a thread per request."""

    def __init__(self, handler: RestApiHandler, *, port: int, host: str = "127.0.0.1") -> None:
        self.handler = handler

        class Request(_Request):
            rest = handler

        self._server = _ApiHttpServer((host, port), Request)
        self.port = int(self._server.server_address[1])
        Request.endpoint = f"{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"rest-api-{self.port}", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.handler.spec.stage}/"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
