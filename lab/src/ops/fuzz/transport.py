"""Requests over HTTP exactly as drawn: any method, repeated headers, raw bytes, no client fix-ups
(http.client, since urllib would refuse or normalise half of what a hostile client sends)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from ops.fuzz.oracle import Answer
from ops.fuzz.requests import Request

TIMEOUT_SECONDS = 60.0


class HttpTransport:
    """Sends to the API's host and port (the request's path already holds the stage)."""

    def __init__(self, api_url: str, *, timeout: float = TIMEOUT_SECONDS) -> None:
        url = urlsplit(api_url)
        if url.scheme != "http" or url.hostname is None:
            raise ValueError(f"an http:// API URL is needed, got {api_url!r}")
        self.host, self.port = url.hostname, url.port or 80
        self.timeout = timeout

    def __call__(self, request: Request) -> Answer:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.putrequest(request.method, request.path, skip_host=True, skip_accept_encoding=True)
            if not any(name.lower() == "host" for name, _ in request.headers):
                connection.putheader("Host", f"{self.host}:{self.port}")
            for name, value in request.headers:
                connection.putheader(name, value.encode("latin-1"))
            if request.body or request.method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(request.body)))
            connection.endheaders(request.body or None)
            response = connection.getresponse()
            return Answer(response.status, tuple(response.getheaders()), response.read())
        finally:
            connection.close()
