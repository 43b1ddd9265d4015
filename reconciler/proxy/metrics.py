"""The proxy's Prometheus metrics and health check, on a local address when asked
(``--metrics HOST:PORT``): ``GET /metrics`` in Prometheus' text format, ``GET /healthz``.

The daemon's one thread updates the figures; the HTTP server answers from its own thread and
never touches the store, so a scrape cannot block the daemon nor a store outage the scrape.
``/healthz`` is 200 with ``{"leases", "config_seq", "store": "ok"}`` while the store answers,
503 with ``"store": "unreachable"`` once it does not.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from reconciler.proxy import codes

# call latency buckets, seconds: a built-in answers in milliseconds, a cloud API in minutes
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


@dataclass(slots=True)
class Health:
    """What /healthz says; written by the daemon's thread, read by the server's."""

    leases: int = 0
    config_seq: int | None = None
    store_ok: bool = True

    def document(self) -> tuple[int, bytes]:
        doc = {"leases": self.leases, "config_seq": self.config_seq,
               "store": "ok" if self.store_ok else "unreachable"}
        return (200 if self.store_ok else 503), orjson.dumps(doc)


class Metrics:
    """The figures, in a registry of their own (several proxies may share a process in
    tests)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.health = Health()
        self.leases = Gauge("xce_proxy_leases_held", "provider leases this proxy holds",
                            registry=self.registry)
        self.queue = Gauge("xce_proxy_queue_depth", "calls queued or taken, not yet "
                           "answered, per provider", ["provider"], registry=self.registry)
        self.latency = Histogram("xce_proxy_call_seconds", "how long a provider call took",
                                 ["provider", "verb"], buckets=_BUCKETS, registry=self.registry)
        self.inventory_age = Gauge("xce_proxy_inventory_age_seconds", "seconds since this "
                                   "proxy last published the provider's inventory",
                                   ["provider"], registry=self.registry)
        self.refusals = Counter("xce_proxy_refusals", "calls, leases and publications the "
                                "allowlist refused", ["provider", "opcode"],
                                registry=self.registry)

    def set_leases(self, held: int) -> None:
        self.leases.set(held)
        self.health.leases = held

    def set_queue(self, depth: dict[str, int], served: tuple[str, ...]) -> None:
        for provider in served:
            self.queue.labels(provider).set(depth.get(provider, 0))

    def forget(self, provider: str) -> None:
        """A provider no longer served: its per-provider figures go."""
        for family in (self.queue, self.inventory_age):
            try:
                family.remove(provider)
            except KeyError:
                continue

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a pair; else USAGE."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise codes.error(codes.USAGE, f"--metrics {text!r} is not HOST:PORT", "xce-proxy",
                          "give e.g. --metrics 127.0.0.1:9464")
    return host, int(port)


def serve_metrics(metrics: Metrics, address: tuple[str, int]) -> ThreadingHTTPServer:
    """Start the HTTP server on ``address`` in a daemon thread; METRICS_ADDRESS when the
    address cannot be listened on."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the server's name for it
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, metrics.exposition())
            elif path == "/healthz":
                status, body = metrics.health.document()
                self._send(status, "application/json", body)
            else:
                self._send(404, "text/plain", b"not found: try /metrics or /healthz\n")

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # scrapes are not events of the proxy's log

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        daemon_threads = True

    try:
        server = Server(address, Handler)
    except OSError as err:
        raise codes.error(codes.METRICS_ADDRESS, f"cannot listen on {address[0]}:{address[1]} "
                          f"for --metrics: {err.strerror or err}", "xce-proxy") from None
    threading.Thread(target=server.serve_forever, name="xce-proxy-metrics",
                     daemon=True).start()
    return server
