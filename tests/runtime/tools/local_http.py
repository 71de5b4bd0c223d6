"""A real HTTP server on loopback that records what reaches it, and a fake resolver, so the
HTTP tools and the SSRF guard are tested end to end without touching the network.

A helper module rather than a conftest: other tests share this directory and must not get
a patched resolver. Test modules wrap `serve()` and `install_fake_dns()` in fixtures."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from runtime.tools import ssrf


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class LocalServer:
    port: int
    requests: list[Recorded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(
        self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, indent=2).encode(), "application/json")

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.record.requests.append(Recorded(self.command, parts.path, query, headers, body))
        path = parts.path
        if path == "/text":
            self._send(200, "hello, wörld".encode(), "text/plain; charset=utf-8")
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            self._json(status, {"error": "nope", "status": status})
        elif path == "/redirect":
            self._send(302, b"", "text/plain", {"Location": query["to"][0]})
        elif path == "/loop":
            self._send(302, b"", "text/plain", {"Location": "/loop"})
        elif path == "/sleep":
            time.sleep(float(query.get("s", ["1"])[0]))
            self._json(200, {"slept": True})
        elif path == "/echo-headers":
            status = int(query.get("status", ["200"])[0])
            if query.get("as") == ["text"]:  # JSON text the tool does not parse: as escaped
                body = json.dumps({"headers": headers}).encode()
                self._send(status, body, "text/plain; charset=utf-8")
            else:
                self._json(status, {"headers": headers})
        else:
            self._json(
                200,
                {
                    "method": self.command,
                    "path": path,
                    "query": query,
                    "body": body.decode() or None,
                    "host": headers.get("host"),
                },
            )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    block_on_close = False  # a sleeping handler must not hold up teardown
    record: LocalServer


@contextmanager
def serve() -> Iterator[LocalServer]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.record = LocalServer(port=httpd.server_address[1])
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd.record
    finally:
        httpd.shutdown()
        httpd.server_close()


def unused_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


FAKE_DNS: dict[str, list[str]] = {
    "localhost.test": ["127.0.0.1"],
    "svc.test": ["127.0.0.1"],
    "rebind.test": ["93.184.216.34", "10.0.0.1"],
    "public.test": ["93.184.216.34"],
    "metadata.test": ["169.254.169.254"],
}


def install_fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send every name lookup the guard makes to FAKE_DNS: no test depends on real DNS."""

    async def resolve(host: str, port: int) -> list[ssrf.IPAddress]:
        if host not in FAKE_DNS:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(a) for a in FAKE_DNS[host]]

    monkeypatch.setattr(ssrf, "resolve", resolve)
