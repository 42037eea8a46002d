"""The AWS endpoint: moto's werkzeug application served on 127.0.0.1 (as http://localhost:<port>).

The server is built in the caller's thread (so a taken port fails here, with a clear error,
instead of inside a background thread as moto's ThreadedMotoServer would) and then served by a
daemon thread; each request gets its own thread. Step Functions execution is switched on through
moto's documented `/moto-api/config` endpoint.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import threading
import urllib.request
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from moto.core.config import default_user_config
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from localcloud.patches import SerializeAtomicRequests

logger = logging.getLogger("localcloud.server")


class PortInUseError(RuntimeError):
    """The port the local cloud wants is taken (by another local cloud, LocalStack, anything)."""

    def __init__(self, what: str, port: int) -> None:
        super().__init__(
            f"port {port} on 127.0.0.1 ({what}) is already in use: stop whatever listens there "
            f"(`make local-down` if it is a local cloud) or choose another port with --port / LOCALCLOUD_PORT"
        )
        self.port = port


def is_port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the servers bind: connections of a just-stopped local cloud in TIME_WAIT do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


Control = Callable[[str, str, bytes], tuple[int, dict[str, Any]]]
"""(method, path, body) -> (status, JSON document) for requests under /_localcloud/."""
CONTROL_PREFIX = "/_localcloud/"


class _WithControl:
    """moto's WSGI app, plus the local cloud's own control routes under /_localcloud/."""

    def __init__(self, app: Callable[..., Any], control: Control) -> None:
        self._app = app
        self._control = control

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = str(environ.get("PATH_INFO", ""))
        if not path.startswith(CONTROL_PREFIX):
            return self._app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        status, document = self._control(str(environ["REQUEST_METHOD"]), path, body)
        data = json.dumps(document).encode("utf-8")
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
        )
        return [data]


class MotoEndpoint:
    """moto on http://127.0.0.1:<port>, with Step Functions executing state machines."""

    def __init__(self, port: int, host: str = "127.0.0.1", *, control: Control | None = None) -> None:
        self.host = host
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        if port and not is_port_free(port, host):
            raise PortInUseError("AWS endpoint", port)
        try:
            app: Any = SerializeAtomicRequests(DomainDispatcherApplication(create_backend_app))
            self._server: BaseWSGIServer = make_server(
                host,
                port,
                _WithControl(app, control) if control else app,
                threaded=True,
                request_handler=MotoRequestHandler,
            )
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise PortInUseError("AWS endpoint", port) from exc
            raise
        except SystemExit as exc:  # werkzeug prints "Address already in use" and exits on a lost race
            raise PortInUseError("AWS endpoint", port) from exc
        self.port = int(self._server.server_address[1])
        self._previous_sfn_config: dict[str, Any] = {}
        # The Step Functions interpreter calls Lambda back at http://localhost:$MOTO_PORT. Set once,
        # before anything runs; never changed per call; restored by stop().
        self._previous_moto_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-endpoint", daemon=True)

    @property
    def url(self) -> str:
        # `localhost`, not the address it binds: moto reads the host of a path-style S3 URL as a
        # bucket unless it is `localhost`, so a CloudFormation TemplateURL on http://127.0.0.1:...
        # (what `cdk deploy` passes) fails with "The specified bucket does not exist".
        return f"http://localhost:{self.port}"

    def start(self) -> None:
        self._thread.start()
        self._previous_sfn_config = dict(default_user_config.get("stepfunctions", {}))
        self.configure({"stepfunctions": {**self._previous_sfn_config, "execute_state_machine": True}})

    def configure(self, config: dict[str, object]) -> dict[str, object]:
        request = urllib.request.Request(  # noqa: S310 - our own http://127.0.0.1 endpoint
            f"{self.url}/moto-api/config",
            data=json.dumps(config).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return dict(json.loads(response.read()))

    def stop(self) -> None:
        if self._thread.is_alive():  # moto's config is process-global: give back what we found
            self.configure({"stepfunctions": self._previous_sfn_config})
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
        if self._previous_moto_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = self._previous_moto_port
