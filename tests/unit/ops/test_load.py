"""ops.load's round against a stand-in API on 127.0.0.1: what it counts, resends and times."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ops.load import __main__ as load_main
from ops.load.run import Plan, Round, percentiles
from ops.outcomes import outcomes, request_factory
from ops.service import service

ROOT = Path(__file__).resolve().parents[3]


class _StandInApi(ThreadingHTTPServer):
    """POST /local/orders -> 202 (the first POST of every third key answers 429 first); GET
    /local/orders/{id} -> RUNNING on the first read, COMPLETED after."""

    daemon_threads = True

    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()
        self.keys: Counter[str] = Counter()
        self.bodies: list[Any] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _StandInApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        key = self.headers["Idempotency-Key"]
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.keys[key] += 1
            throttled = self.server.keys[key] == 1 and len(self.server.keys) % 3 == 0
        if throttled:
            self._send(429, {"message": "Too Many Requests"})
        else:
            self._send(202, {"order_id": f"o-{key}", "status": "ACCEPTED", "status_url": "-"})

    def do_GET(self) -> None:
        order_id = self.path.rsplit("/", 1)[1]
        with self.server.lock:
            self.server.reads[order_id] += 1
            status = "RUNNING" if self.server.reads[order_id] == 1 else "COMPLETED"
        self._send(200, {"order_id": order_id, "status": status})


@pytest.fixture
def api() -> Iterator[_StandInApi]:
    server = _StandInApi()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_round_places_every_order_once_and_follows_it_until_final(api):
    # Given 30 orders from 4 clients, at most 2 in flight each, read every 50 ms
    plan = Plan(entities=30, clients=4, window=2, poll=0.05, deadline=30)
    # When the round runs
    figures = Round(f"http://127.0.0.1:{api.server_address[1]}/local/", plan, label="t").run()
    # Then each order was accepted once (a 429 resent with the same key) and read until final
    assert figures["final"] == {"COMPLETED": 30}
    assert figures["not_accepted"] == 0
    assert figures["not_final"] == 0
    assert len(api.keys) == 30
    assert figures["statuses"]["POST 429"] == 10
    assert figures["statuses"]["POST 202"] == 30
    assert all(reads == 2 for reads in api.reads.values())
    assert figures["connection_errors"] == {}
    # And the latency of each kind is there, end to end at least one poll interval
    assert figures["end_to_end_ms"]["p50"] >= 50
    assert set(figures["post_ms"]) == {"p50", "p95", "p99", "max"}
    assert figures["entities_per_second"] > 0


def test_a_rounds_bodies_are_the_proofs_requests_for_the_happy_outcome(api):
    # Given the service's own request for its happy outcome (the sample's: an order of a seeded sku)
    request, happy = request_factory(service()), outcomes(service())[0].name
    # When a round places 6 orders
    Round(
        f"http://127.0.0.1:{api.server_address[1]}/local/", Plan(entities=6, clients=2, poll=0.05), label="t"
    ).run()
    # Then the bodies (a 429 resent as it was) are the proof's, one per order number
    expected = [request(happy, n) for n in range(1, 7)]
    assert set(map(json.dumps, api.bodies)) == set(map(json.dumps, expected))


def test_a_round_goes_only_to_127_0_0_1():
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        Round("http://example.com/local/", Plan(entities=1, clients=1), label="t").run()


def test_percentiles():
    samples = [float(n) for n in range(1, 102)]
    assert percentiles(samples) == {"p50": 51.0, "p95": 96.0, "p99": 100.0, "max": 101.0}
    assert percentiles([]) == {}


def test_the_report_gives_the_local_cloud_cpu_per_entity_and_what_it_caps():
    figures = Round("http://127.0.0.1:9/local/", Plan(entities=4, clients=1), label="1").figures(0.0)
    figures.update(load_before=[1.0], load_after=[2.0], cloud_cpu_per_entity=0.512)
    report = {"command": "c", "cloud": "x", "machine": "m", "niceness": 0, "seconds": 1.0}
    report.update(window=4, poll=1.0, rounds=[figures], last_vs_first=0.0, verdict="OK")

    text = load_main._markdown(report)

    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    header = next(line for line in text.splitlines() if line.startswith("| round |"))
    assert header.split("|").index(" local cloud CPU s per order ") == row.split("|").index(" 0.512 ")
    assert "at most about 1 / that orders/s" in text


def test_a_recorded_command_still_runs_with_its_old_flag():
    # Given the command results/ops/load.{json,md} recorded before the flag was --entities
    recorded = json.loads((ROOT / "results" / "ops" / "load.json").read_text())["command"]
    assert "--orders 1000" in recorded
    # Then it parses to the same plan as the new flag
    old = load_main.parser().parse_args(recorded.split()[3:])
    assert old.entities == load_main.parser().parse_args(["--entities", "1000"]).entities == 1000
