"""The dev console's files, and the one listing it needs, on `agentfn dev`'s own port.

`/` is a page and a script shipped in the package (infra/local/console/: no build step, no CDN)
that uses the public API only — REST and the SSE stream — so whatever it does, curl can do.
`GET /runs?limit=N` lists the runs this server has seen, newest first (agentfn dev only: the
deployed API has no listing; its runs are in DynamoDB and Step Functions)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from infra.local.live_hub import LiveHub

FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/console.css": ("console.css", "text/css; charset=utf-8"),
}
HERE = Path(__file__).resolve().parent / "console"
HEADERS = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]


Answer = tuple[int, list[tuple[str, str]], bytes]
POLICY = "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'"


#: What `GET /dev/status` answers: the spec being served and an invalid edit's problems
#: (infra.local.dev_reload; set by `agentfn dev` once its stack runs).
status_source: Callable[[], dict[str, Any]] | None = None


def answer(method: str, path: str, query: str, hub: LiveHub) -> Answer | None:
    """The console's answer to this request, or None: not the console's (the API's)."""
    if method != "GET":
        return None
    if path == "/dev/status" and status_source is not None:
        status = json.dumps(status_source()).encode()
        return 200, [("Content-Type", "application/json"), *HEADERS], status
    if path == "/favicon.ico":
        return 204, HEADERS, b""  # no icon, and no 404 in the browser's console
    if path in FILES:
        name, kind = FILES[path]
        headers = [("Content-Type", kind), ("Content-Security-Policy", POLICY), *HEADERS]
        return 200, headers, (HERE / name).read_bytes()
    if path.rstrip("/") == "/runs":
        limit = _limit(parse_qs(query).get("limit", ["50"])[0])
        if limit is None:
            body: dict[str, Any] = {
                "error_code": "INVALID_REQUEST",
                "field": "limit",
                "error_message": "limit: a whole number from 1 to 200",
            }
            return 400, [("Content-Type", "application/json")], json.dumps(body).encode()
        runs = json.dumps({"runs": hub.recent(limit)}).encode()
        return 200, [("Content-Type", "application/json"), *HEADERS], runs
    return None


def _limit(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 1 <= value <= 200 else None
