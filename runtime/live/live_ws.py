"""Live runs when deployed: the agent's function posts each committed event and the
answer's text (batched) to the WebSocket connections that watch the run.

Lambda's managed Python runtime cannot stream an HTTP response, so watchers connect to the
stack's WebSocket API (infra/sam/live.py) and `subscribe` to a run (handlers/live.py), which
writes a watch item `WATCH#{run_id}` / `CONN#{connection_id}` (TTL: a connection lives at
most 2 hours). Here, the function that advances the run finds those items and posts to each
connection through the API Gateway Management API.

Posting is network I/O and the run must not wait for it: items go on a queue, a worker
thread posts them, and the handler `flush`es before it returns (Lambda freezes a returned
invocation). Chunks are batched (every 100 ms, or 2 KB of text, or before the next event), so
a fast model costs a few posts a second per watcher, not one per token. A connection that is
gone (410) loses its watch item; any other failure is logged and dropped: watching never
breaks a run. A run's watchers are read for every event (a watcher that subscribed after the
read got that event from the store when it subscribed: none is lost), and at most once a
second for chunks (a new watcher's first text may come up to a second late).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Any

from runtime.events import Event

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.1
BATCH_CHARS = 2000
WATCHERS_TTL_SECONDS = 1.0
_STOP = object()


def watch_key(run_id: str) -> str:
    return f"WATCH#{run_id}"


class WebSocketPublisher:
    def __init__(self, dynamodb: Any, table: str, management: Any):
        self.dynamodb = dynamodb
        self.table = table
        self.management = management  # apigatewaymanagementapi client, at the stage's URL
        self._queue: queue.Queue[Any] = queue.Queue()
        self._watchers: dict[str, tuple[float, list[str]]] = {}
        self._pending: dict[str, dict[str, Any]] = {}  # run → its unsent chunk batch
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    # ---- the engine's side (never blocks on the network) ------------------------------

    def on_event(self, event: Event) -> None:
        self._put(("event", event.run_id, event.model_dump(mode="json")))

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        self._put(("chunk", chunk["run_id"], chunk))

    def _put(self, item: Any) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, daemon=True)
                self._worker.start()
        self._queue.put(item)

    def flush(self, timeout: float = 5.0) -> None:
        """Posts what is queued (the invocation is about to return)."""
        if self._worker is None:
            return
        done = threading.Event()
        self._queue.put(("flush", "", done))
        done.wait(timeout)

    # ---- the worker ------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=BATCH_SECONDS)
            except queue.Empty:
                self._send_batches(older_than=BATCH_SECONDS)
                continue
            kind, run_id, payload = item
            try:
                if kind == "chunk":
                    self._add_chunk(run_id, payload)
                elif kind == "event":
                    self._send_batches(run=run_id)  # the text before the event, first
                    self._post(run_id, {"type": "event", "event": payload}, fresh=True)
                else:  # flush
                    self._send_batches()
                    payload.set()
            except Exception:  # a watcher's trouble is never the run's
                log.warning("live delivery failed", exc_info=True)

    def _add_chunk(self, run_id: str, chunk: dict[str, Any]) -> None:
        batch = self._pending.get(run_id)
        same = batch is not None and all(
            batch[k] == chunk[k] for k in ("turn", "model", "attempt", "agent")
        )
        if batch is not None and not same:
            self._send_batches(run=run_id)
            batch = None
        if batch is None:
            self._pending[run_id] = {**chunk, "since": time.monotonic()}
        else:
            batch["text"] += chunk["text"]
        if len(self._pending[run_id]["text"]) >= BATCH_CHARS:
            self._send_batches(run=run_id)

    def _send_batches(self, run: str | None = None, older_than: float = 0.0) -> None:
        now = time.monotonic()
        for run_id in list(self._pending):
            batch = self._pending[run_id]
            if (run is None or run_id == run) and now - batch["since"] >= older_than:
                del self._pending[run_id]
                chunk = {k: v for k, v in batch.items() if k != "since"}
                self._post(run_id, {"type": "chunk", "chunk": chunk})

    def _connections(self, run_id: str, fresh: bool = False) -> list[str]:
        cached = self._watchers.get(run_id)
        if not fresh and cached is not None and time.monotonic() - cached[0] < WATCHERS_TTL_SECONDS:
            return cached[1]
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": watch_key(run_id)}},
            "ProjectionExpression": "sk",
            "ConsistentRead": True,  # a watch written just before this event must be seen
        }
        found: list[str] = []
        while True:  # every page: a run may have more watchers than one page holds
            answer = self.dynamodb.query(**query)
            found += [item["sk"]["S"].removeprefix("CONN#") for item in answer.get("Items", [])]
            if not answer.get("LastEvaluatedKey"):
                break
            query["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        self._watchers[run_id] = (time.monotonic(), found)
        return found

    def _post(self, run_id: str, message: dict[str, Any], fresh: bool = False) -> None:
        connections = self._connections(run_id, fresh)
        if not connections:
            return
        data = json.dumps(message, separators=(",", ":"), default=str).encode()
        for connection in connections:
            try:
                self.management.post_to_connection(ConnectionId=connection, Data=data)
            except self.management.exceptions.GoneException:
                self._forget(run_id, connection)
            except Exception:
                log.warning("posting to a watcher failed", exc_info=True)

    def _forget(self, run_id: str, connection: str) -> None:
        self.dynamodb.delete_item(
            TableName=self.table,
            Key={"pk": {"S": watch_key(run_id)}, "sk": {"S": f"CONN#{connection}"}},
        )
        cached = self._watchers.get(run_id)
        if cached is not None and connection in cached[1]:
            cached[1].remove(connection)
