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
breaks a run.

Most runs have no watcher, and finding out must cost them next to nothing: `subscribe` also
counts the run's watches on one flag item (`WATCH#{run_id}` / `FLAG`: `n`, and when the
newest watch expires); the last watch to go deletes it. The publisher reads that flag (one
GetItem) when it first has something for a run, again after WATCH_CHECK_SECONDS, and
once more at the end of an invocation (`flush`) if something went unposted since; in
between the answer is cached. Only a watched run's watchers are queried: for every event (a
watcher that subscribed after that read got the event from the store when it subscribed),
at most once a second for chunks. Events of an unwatched run are kept (a few, for a short
while) and posted, oldest first, to the watchers the next read finds: a watcher that
subscribed after the run's last read got from the store what was committed before it
subscribed, and gets the rest this way (possibly twice: events carry `seq`). Text written
before that read is not sent (the answer's first words may be missed; its event is not).
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections import deque
from typing import Any

from runtime.events import Event
from runtime.structs import dump

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.1
BATCH_CHARS = 2000
WATCHERS_TTL_SECONDS = 1.0
WATCH_CHECK_SECONDS = 10.0
MISSED_EVENTS = 500  # kept per unwatched run until the next read of its flag
FLAG = "FLAG"


def watch_key(run_id: str) -> str:
    return f"WATCH#{run_id}"


def flag_key(run_id: str) -> dict[str, Any]:
    """The run's watch flag (handlers.live keeps it): whether anyone watches it."""
    return {"pk": {"S": watch_key(run_id)}, "sk": {"S": FLAG}}


def forget_watch(dynamodb: Any, table: str, run_id: str, connection: str) -> None:
    """Delete one watch; when it was there, count it off the run's flag (and delete the
    flag with the last one)."""
    key = {"pk": {"S": watch_key(run_id)}, "sk": {"S": f"CONN#{connection}"}}
    gone = dynamodb.delete_item(TableName=table, Key=key, ReturnValues="ALL_OLD")
    if "Attributes" not in gone:
        return
    try:
        left = dynamodb.update_item(
            TableName=table,
            Key=flag_key(run_id),
            UpdateExpression="ADD n :minus",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":minus": {"N": "-1"}},
            ReturnValues="UPDATED_NEW",
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        return
    if int(left["Attributes"]["n"]["N"]) <= 0:
        with contextlib.suppress(dynamodb.exceptions.ConditionalCheckFailedException):
            dynamodb.delete_item(
                TableName=table,
                Key=flag_key(run_id),
                ConditionExpression="n <= :zero",
                ExpressionAttributeValues={":zero": {"N": "0"}},
            )


class WebSocketPublisher:
    def __init__(self, dynamodb: Any, table: str, management: Any):
        self.dynamodb = dynamodb
        self.table = table
        self.management = management  # apigatewaymanagementapi client, at the stage's URL
        self._queue: queue.Queue[Any] = queue.Queue()
        self._watchers: dict[str, tuple[float, list[str]]] = {}
        self._watched: dict[str, tuple[float, bool]] = {}  # run → (read at, its flag)
        self._missed: dict[str, deque[dict[str, Any]]] = {}  # run → events posted to no one
        self._pending: dict[str, dict[str, Any]] = {}  # run → its unsent chunk batch
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    # ---- the engine's side (never blocks on the network) ------------------------------

    def on_event(self, event: Event) -> None:
        self._put(("event", event.run_id, dump(event)))

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
                    self._settle()
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

    def _is_watched(self, run_id: str) -> bool:
        """The run's flag, read at most every WATCH_CHECK_SECONDS (none: nobody watches)."""
        cached = self._watched.get(run_id)
        now = time.monotonic()
        if cached is not None and now - cached[0] < WATCH_CHECK_SECONDS:
            return cached[1]
        answer = self.dynamodb.get_item(
            TableName=self.table,
            Key=flag_key(run_id),
            ProjectionExpression="expires_at",
            ConsistentRead=True,  # a subscribe just before this read must be seen
        )
        expires = answer.get("Item", {}).get("expires_at", {}).get("N")
        watched = expires is not None and int(expires) > time.time()
        self._watched[run_id] = (now, watched)
        return watched

    def _settle(self) -> None:
        """End of an invocation: a run whose events went to no one since its flag was read
        is read once more (someone may have subscribed meanwhile), then everything cached
        is dropped: the next invocation, maybe in another container, reads afresh."""
        for run_id in list(self._missed):
            self._watched.pop(run_id, None)
            if self._missed.get(run_id) and self._is_watched(run_id):
                self._post(run_id, None, fresh=True)
        self._watched.clear()
        self._missed.clear()

    def _connections(self, run_id: str, fresh: bool = False) -> list[str]:
        cached = self._watchers.get(run_id)
        if not fresh and cached is not None and time.monotonic() - cached[0] < WATCHERS_TTL_SECONDS:
            return cached[1]
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :conn)",
            "ExpressionAttributeValues": {":pk": {"S": watch_key(run_id)}, ":conn": {"S": "CONN#"}},
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

    def _post(self, run_id: str, message: dict[str, Any] | None, fresh: bool = False) -> None:
        """Post `message` (None: only what was missed) to the run's watchers, if any."""
        connections = list(self._connections(run_id, fresh)) if self._is_watched(run_id) else []
        if not connections:
            if message is not None and message["type"] == "event":
                missed = self._missed.setdefault(run_id, deque(maxlen=MISSED_EVENTS))
                missed.append(message)
            if self._watched.get(run_id, (0.0, False))[1]:  # a flag that outlived its watches
                self._watched[run_id] = (time.monotonic(), False)
            return
        backlog = list(self._missed.pop(run_id, ()))
        gone: set[str] = set()
        for each in [*backlog, *([message] if message is not None else [])]:
            data = json.dumps(each, separators=(",", ":"), default=str).encode()
            for connection in [c for c in connections if c not in gone]:
                try:
                    self.management.post_to_connection(ConnectionId=connection, Data=data)
                except self.management.exceptions.GoneException:
                    gone.add(connection)
                    self._forget(run_id, connection)
                except Exception:
                    log.warning("posting to a watcher failed", exc_info=True)

    def _forget(self, run_id: str, connection: str) -> None:
        forget_watch(self.dynamodb, self.table, run_id, connection)
        cached = self._watchers.get(run_id)
        if cached is not None and connection in cached[1]:
            cached[1].remove(connection)
