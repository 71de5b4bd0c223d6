"""A loopback HTTP server for the web tools: the three search providers' endpoints answering
in their documented formats (checking the key each sends its own way), and real pages."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PAGES = Path(__file__).resolve().parents[2] / "fixtures" / "web"
KEY = "test-key-7f3a"
SEEN: list[dict[str, Any]] = []


def _exa(body: dict[str, Any]) -> dict[str, Any]:
    text = "Exa page text " * 20 if "text" in body.get("contents", {}) else None
    results = [
        {"id": f"https://{d}/a", "url": f"https://{d}/a", "title": f"About {body['query']} at {d}",
         "publishedDate": "2026-11-01T00:00:00.000Z", "author": None, "score": 0.9 - i / 10,
         **({"text": text} if text else {"highlights": [f"highlight {i} from {d}"]})}
        for i, d in enumerate(["docs.python.org", "example.org", "spam.example"])
    ]  # fmt: skip
    return {
        "requestId": "r1",
        "resolvedSearchType": "neural",
        "results": results[: body["numResults"]],
    }


def _tavily(body: dict[str, Any]) -> dict[str, Any]:
    results = [
        {"title": "Tavily one", "url": "https://tavily.example/1", "content": "first snippet",
         "score": 0.81, "raw_content": "R" * 60_000 if body.get("include_raw_content") else None},
        {"title": "Tavily two", "url": "https://other.example/2", "content": "second snippet",
         "score": 0.5, "raw_content": None},
    ]  # fmt: skip
    return {"query": body["query"], "results": results[: body["max_results"]], "response_time": 0.4}


def _brave(query: dict[str, list[str]]) -> dict[str, Any]:
    count = int(query["count"][0])
    results = [
        {"title": f"Brave {i}", "url": f"https://brave{i}.example/", "description": f"desc {i}",
         "age": "2 days ago", "extra_snippets": ["more"] if query.get("extra_snippets") else None}
        for i in range(count)
    ]  # fmt: skip
    return {"type": "search", "query": {"original": query["q"][0]}, "web": {"results": results}}


def _firecrawl(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Firecrawl's v2 `/scrape` answer: `{success, data: {<format>, metadata}}`; a page the
    target refuses still succeeds with the target's status in the metadata."""
    url = body["url"]
    if "credits" in url:
        return 402, {"success": False, "error": f"Insufficient credits; key {KEY} is out"}
    status = 404 if "missing" in url else 200
    meta = {"title": "Fixture", "sourceURL": url, "url": url + "#final", "statusCode": status}
    data: dict[str, Any] = {"metadata": meta}
    for kind in body["formats"]:
        data[kind] = {
            "markdown": "# Rendered\n\nText Firecrawl made from " + url,
            "html": "<html><body><h1>Rendered</h1></body></html>",
            "links": ["https://a.example/one", "mailto:x@example.org", "https://b.example/"],
        }[kind]
    return 200, {"success": True, "data": data}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        SEEN.append({"path": parts.path, "query": query, "headers": headers, "body": body})
        path = parts.path
        if path == "/exa/search":
            ok = headers.get("x-api-key") == KEY
            self._json(_exa(body) if ok else {"error": "bad key"}, 200 if ok else 401)
        elif path == "/tavily/search":
            ok = headers.get("authorization") == f"Bearer {KEY}"
            self._json(
                _tavily(body) if ok else {"detail": {"error": "Unauthorized"}}, 200 if ok else 401
            )
        elif path == "/brave/search":
            ok = headers.get("x-subscription-token") == KEY
            self._json(_brave(query) if ok else {"error": "unauthorized"}, 200 if ok else 401)
        elif path == "/firecrawl/v2/scrape":
            if headers.get("authorization") != f"Bearer {KEY}":
                self._json({"success": False, "error": "Unauthorized: Invalid token"}, 401)
            else:
                status, answer = _firecrawl(body)
                self._json(answer, status)
        elif path.startswith("/pages/"):
            page = PAGES / path.removeprefix("/pages/")
            self._send(200, page.read_bytes(), "text/html; charset=utf-8")
        elif path == "/big":
            self._send(200, ("<p>" + "word " * 60_000 + "</p>").encode(), "text/html")
        elif path == "/redirect":
            self._send(302, b"", "text/plain", {"Location": query["to"][0]})
        else:
            self._json({"error": "not found"}, 404)

    do_GET = do_POST = _handle


@contextmanager
def serve() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
