"""A real HTTP server on loopback that records requests and answers from a queue of canned
responses, so provider tests exercise the actual httpx wire path, not a mock transport."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or the raw text when it is not JSON


@dataclass
class Canned:
    status: int
    headers: dict[str, str]
    body: Any  # JSON-serialisable, or str/bytes sent verbatim


class WireServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._canned: deque[Canned] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(
        self, body: Any = None, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        """Queue the answer to the next request."""
        with self._lock:
            self._canned.append(Canned(status, headers or {}, {} if body is None else body))

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, recorded: Recorded) -> Canned:
        with self._lock:
            self.requests.append(recorded)
            if self._canned:
                return self._canned.popleft()
        return Canned(418, {}, {"error": {"message": "wire_server: no canned response queued"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw
                split = urlsplit(self.path)
                canned = server._next(
                    Recorded(
                        method=self.command,
                        path=split.path,
                        query=parse_qs(split.query),
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )
                if isinstance(canned.body, bytes):
                    payload = canned.body
                elif isinstance(canned.body, str):
                    payload = canned.body.encode("utf-8")
                else:
                    payload = json.dumps(canned.body).encode("utf-8")
                self.send_response(canned.status)
                headers = {"Content-Type": "application/json", **canned.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        return Handler


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()
