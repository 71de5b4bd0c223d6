"""Server-sent events on `agentfn dev`: a run, live, for as many watchers as want it.

- `GET /runs/{run_id}/stream` (and `/agents/{agent}/runs/{run_id}/stream`): the run's
  committed events from `?after=N` or the `Last-Event-ID` header (each event's SSE id is its
  number), then the live tail with the answer's text chunks, until the run ends. A watcher
  that reconnects with Last-Event-ID misses nothing and sees nothing twice.
- `POST /agents/{agent}/runs` with `Accept: text/event-stream`: the run is started as usual
  (the same request, answered by the same API handler), then streamed from its first event.

Catch-up reads go through the API handler (`GET …/events`), so a stream sees exactly what
the REST API shows (404 for an unknown run, another agent's run refused). The live tail
comes from infra.local.live_hub; a committed event it skipped (a lagging watcher) is read back
from the store. Chunks have no id: they are live only. A watcher that goes away never
touches the run: only `/cancel` stops it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from infra.local.live_hub import LiveHub, Subscription

KEEPALIVE_SECONDS = 15.0
END_TYPES = frozenset({"run_completed", "run_failed"})
FINISHED = frozenset({"succeeded", "failed", "cancelled"})
_STREAM_PATH = re.compile(r"^(?P<base>(?:/agents/[^/]+)?/runs/(?P<run_id>[^/]+))/stream/?$")
_START_PATH = re.compile(r"^/agents/(?P<agent>[^/]+)/runs/?$")

#: (method, target, body, extra headers) → (status, headers, body), through the API handler.
Ask = Callable[[str, str, bytes], tuple[int, list[tuple[str, str]], bytes]]


def wants_stream(method: str, path: str, accept: str) -> bool:
    if method == "GET" and _STREAM_PATH.match(path):
        return True
    return method == "POST" and bool(_START_PATH.match(path)) and "text/event-stream" in accept


class EventStream:
    """One watcher's connection: `write` sends bytes (raising when the client is gone)."""

    def __init__(self, write: Callable[[bytes], None], ask: Ask, hub: LiveHub):
        self.write = write
        self.ask = ask
        self.hub = hub
        self.after = -1
        self.ended = False

    # ---- the wire ---------------------------------------------------------------------

    def _send_event(self, event: dict[str, Any]) -> None:
        data = json.dumps(event, separators=(",", ":"), default=str)
        self.write(f"id: {event['seq']}\nevent: {event['type']}\ndata: {data}\n\n".encode())
        self.after = event["seq"]
        self.ended = self.ended or event["type"] in END_TYPES

    def _send_chunk(self, chunk: dict[str, Any]) -> None:
        data = json.dumps(chunk, separators=(",", ":"))
        self.write(f"event: chunk\ndata: {data}\n\n".encode())

    # ---- catching up from the store ---------------------------------------------------

    def catch_up(self, base: str) -> tuple[int, bytes] | None:
        """Sends every committed event after `self.after`; (status, body) of the API's
        answer when it refused (unknown run), else None."""
        while True:
            status, _, body = self.ask("GET", f"{base}/events?after={self.after}&limit=500", b"")
            if status != 200:
                return status, body
            events = json.loads(body)["events"]
            for event in events:
                self._send_event(event)
            if len(events) < 500:
                return None

    def follow(self, base: str, subscription: Subscription) -> None:
        """The live tail until the run ends, the server stops or the watcher goes away."""
        last_beat = time.monotonic()
        while not self.ended:
            item = subscription.get(timeout=1.0)
            if subscription.lagged:  # the queue overflowed: the store has what it dropped
                subscription.lagged = False
                self.catch_up(base)
                continue
            if item is None:
                if time.monotonic() - last_beat >= KEEPALIVE_SECONDS:
                    self.write(b": keepalive\n\n")
                    last_beat = time.monotonic()
                continue
            if item["kind"] == "closed":
                return
            if item["kind"] == "chunk":
                if item["chunk"]["run_id"] == subscription.run_id:
                    self._send_chunk(item["chunk"])
                continue
            event = item["event"]
            if event["run_id"] != subscription.run_id:
                continue  # queued before the watcher knew its run
            if event["seq"] <= self.after:
                continue  # caught up from the store already
            if event["seq"] > self.after + 1:
                self.catch_up(base)  # a gap: read it back, in order
                continue
            self._send_event(event)


def last_event_id(headers: Any, query: dict[str, list[str]]) -> int:
    for value in (headers.get("Last-Event-ID"), *(query.get("after") or [])):
        if value is not None:
            try:
                return max(-1, int(value))
            except ValueError:
                pass
    return -1


def stream_path(path: str) -> tuple[str, str] | None:
    found = _STREAM_PATH.match(path)
    return (found["base"], found["run_id"]) if found else None


def serve(handler: Any, bridge: Callable[[dict[str, Any]], Any], hub: LiveHub, body: bytes) -> int:
    """Answers one streaming request on `handler` (a BaseHTTPRequestHandler); the status."""
    from urllib.parse import parse_qs, urlsplit

    from infra.local.dev_gateway import proxy_event

    parts = urlsplit(handler.path)
    skip = {"accept", "content-length", "content-type", "last-event-id"}
    kept = [(k, v) for k, v in handler.headers.items() if k.lower() not in skip]
    client = {"source_ip": handler.client_address[0], "host": handler.headers.get("Host", "")}

    def ask(method: str, target: str, payload: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        sent = [*kept, ("Accept", "application/json")]
        if payload:
            sent.append(("Content-Type", handler.headers.get("Content-Type", "application/json")))
        answer: tuple[int, list[tuple[str, str]], bytes] = bridge(
            proxy_event(method, target, sent, payload, **client)
        )
        return answer

    def write(raw: bytes) -> None:
        handler.wfile.write(raw)
        handler.wfile.flush()

    subscription = hub.subscribe(None)  # before the run can say anything
    try:
        found = stream_path(parts.path)
        if found is not None:
            base, run_id = found
            after = last_event_id(handler.headers, parse_qs(parts.query))
            status, headers, raw = ask("GET", base, b"")
        else:  # start the run, then stream it: the stream is the wait
            after = -1
            status, headers, raw = ask("POST", handler.path, _no_inline_wait(body))
            if status < 300:
                run_id = str(json.loads(raw)["run_id"])
                base = f"{parts.path.rstrip('/')}/{run_id}"
        if status >= 300:
            _plain(handler, status, headers, raw)
            return status
        subscription.run_id = run_id
        handler.send_response(200)
        for name, value in (
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
            ("X-Accel-Buffering", "no"),
        ):
            handler.send_header(name, value)
        handler.end_headers()
        stream = EventStream(write, ask, hub)
        stream.after = after
        if found is not None:  # a started run's every event is queued since before it began
            stream.catch_up(base)
            if not stream.ended and _finished(ask, base):  # resumed after its last event
                stream.catch_up(base)  # anything committed since the first read
                return 200
        stream.follow(base, subscription)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the watcher went away; the run goes on
    finally:
        subscription.close()
    return 200


def _finished(ask: Ask, base: str) -> bool:
    status, _, raw = ask("GET", base, b"")
    return status == 200 and json.loads(raw).get("status") in FINISHED


def _plain(handler: Any, status: int, headers: list[tuple[str, str]], raw: bytes) -> None:
    handler.send_response(status)
    for name, value in headers:
        if name.lower() not in {"content-length", "transfer-encoding", "connection"}:
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _no_inline_wait(body: bytes) -> bytes:
    """A streamed start answers at once (`wait_seconds: 0` unless the caller set it): the
    run's progress comes over the stream, not in the start's answer."""
    try:
        request = json.loads(body)
    except ValueError:
        return body  # the API answers it: 400, naming the body
    if isinstance(request, dict) and "wait_seconds" not in request:
        request["wait_seconds"] = 0
        return json.dumps(request).encode()
    return body
