"""A real HTTP hook endpoint on loopback: it records every request and answers what the test
chose, so http hooks are tested end to end (SSRF guard, headers, redirects, timeouts)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: (path, JSON payload) → (status, body); a body that is not bytes is sent as JSON.
Answer = Callable[[str, Any], tuple[int, Any]]


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    payload: Any


@dataclass
class HookServer:
    port: int
    answer: Answer
    received: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def asked(self, event: str) -> list[Any]:
        return [r.payload for r in self.received if r.payload.get("event") == event]


def allow(path: str, payload: Any) -> tuple[int, Any]:
    """The default answer: /status/N answers N, /slow sleeps a second, anything else allows."""
    if path.startswith("/status/"):
        return int(path.rsplit("/", 1)[1]), {"error": "policy service down"}
    if path == "/slow":
        time.sleep(1.0)
    return 200, {"decision": "allow"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = self.server.record
        record.received.append(Received(self.path, headers, payload))
        status, body = record.answer(self.path, payload)
        extra: dict[str, str] = {}
        if isinstance(body, dict) and "location" in body and 300 <= status < 400:
            extra["Location"] = body["location"]
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(0 if status == 204 else len(data)))
        self.end_headers()
        if status != 204:
            self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    block_on_close = False
    record: HookServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a hook's timeout) is expected here, not an error."""


@contextmanager
def hook_server(answer: Answer = allow) -> Iterator[HookServer]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.record = HookServer(port=httpd.server_address[1], answer=answer)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd.record
    finally:
        httpd.shutdown()
        httpd.server_close()
