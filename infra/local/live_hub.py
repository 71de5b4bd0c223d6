"""The dev server's live fan-out: every committed event and every text chunk of every run,
handed to whoever watches that run (an SSE connection, the dev console).

Committed events are also in the store, so a watcher that falls behind loses nothing: its
queue is bounded, and when it overflows the watcher is marked `lagged` and reads the events
it missed back from the store (infra.local.dev_stream). Chunks are ephemeral: a lagging watcher
misses some of them, and the committed answer still arrives whole.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from runtime.events import Event
from runtime.structs import dump

BACKLOG = 10_000  # items a watcher may have waiting before it counts as lagging
CLOSED: dict[str, Any] = {"kind": "closed"}


class Subscription:
    def __init__(self, hub: LiveHub, run_id: str | None):
        self.hub = hub
        self.run_id = run_id  # None: every run (until the watcher knows which it wants)
        self.items: queue.Queue[dict[str, Any]] = queue.Queue(BACKLOG)
        self.lagged = False

    def offer(self, run_id: str, item: dict[str, Any]) -> None:
        if self.run_id is not None and run_id != self.run_id:
            return
        try:
            self.items.put_nowait(item)
        except queue.Full:
            self.lagged = True  # the store has every event; chunks are only live

    def get(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.items.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        self.hub.unsubscribe(self)


_STATUS_AFTER = {
    "run_started": "running",
    "approval_requested": "awaiting_approval",
    "clarification_requested": "awaiting_input",
    "approval_decided": "running",
    "clarification_answered": "running",
    "child_run_started": "awaiting_children",
    "child_run_finished": "running",
    "run_completed": "succeeded",
}
RECENT_RUNS = 200


class LiveHub:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self._lock = threading.Lock()
        self._recent: dict[str, dict[str, Any]] = {}  # run → what the console lists

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The runs this server has seen, newest first (`GET /runs` on agentfn dev)."""
        with self._lock:
            runs = list(self._recent.values())
        return sorted(runs, key=lambda r: r["started_at"], reverse=True)[:limit]

    def remember(self, run: dict[str, Any]) -> None:
        """List a run this server did not start (another process's, from the local state:
        infra.local.dev_state.list_others_runs); its later events here update it."""
        with self._lock:
            self._recent.setdefault(run["run_id"], run)
            while len(self._recent) > RECENT_RUNS:
                del self._recent[next(iter(self._recent))]

    def knows(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._recent

    def _note(self, event: Event) -> None:
        with self._lock:
            run = self._recent.get(event.run_id)
            if run is None:
                if event.type != "run_started":
                    return
                run = self._recent[event.run_id] = {
                    "run_id": event.run_id,
                    "agent": event.data.get("agent"),
                    "input": str(event.data.get("input") or "")[:200],
                    "started_at": event.at,
                }
                if event.data.get("trigger"):  # started by a schedule, webhook, queue, event
                    run["trigger"] = event.data["trigger"]
                while len(self._recent) > RECENT_RUNS:
                    del self._recent[next(iter(self._recent))]
            if event.type == "run_failed":
                cancelled = event.data.get("error_code") == "CANCELLED"
                run["status"] = "cancelled" if cancelled else "failed"
            else:
                run["status"] = _STATUS_AFTER.get(event.type, run.get("status", "running"))
            run["updated_at"] = event.at

    def subscribe(self, run_id: str | None = None) -> Subscription:
        subscription = Subscription(self, run_id)
        with self._lock:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscriptions.discard(subscription)

    def _publish(self, run_id: str, item: dict[str, Any]) -> None:
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            subscription.offer(run_id, item)

    def on_event(self, event: Event) -> None:
        """An EventListener: each event as it is committed."""
        self._note(event)
        self._publish(event.run_id, {"kind": "event", "event": dump(event)})

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        """A ChunkListener (runtime.live.live): each text delta as it is written."""
        self._publish(chunk["run_id"], {"kind": "chunk", "chunk": chunk})

    def close(self) -> None:
        """Ends every watcher's stream (the server is stopping)."""
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            try:
                subscription.items.put_nowait(CLOSED)
            except queue.Full:
                subscription.lagged = True
