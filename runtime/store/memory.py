"""In-process stores with the same semantics as DynamoDB/S3 (for tests and benchmarks).

Items are encoded exactly as the DynamoDB store encodes them, so item sizes, counts and
the atomicity of commits can be asserted and measured without AWS.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runtime.errors import RunNotFound, StateConflict
from runtime.events import Event
from runtime.messages import Message
from runtime.store import items as it
from runtime.store import records
from runtime.store.base import Commit, RunHead, SessionState


class MemoryBlobs:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> None:
        self.objects[key] = body

    def get(self, key: str) -> bytes:
        try:
            return self.objects[key]
        except KeyError:
            raise KeyError(f"no object {key!r}") from None

    def list(self, prefix: str, limit: int = 100) -> list[tuple[str, int]]:
        keys = sorted(k for k in self.objects if k.startswith(prefix))[:limit]
        return [(k, len(self.objects[k])) for k in keys]

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix`; how many there were."""
        keys = [k for k in list(self.objects) if k.startswith(prefix)]
        for key in keys:
            self.objects.pop(key, None)
        return len(keys)

    def presign(self, key: str, seconds: int) -> str:
        self.get(key)  # KeyError when there is none, as S3 would answer the URL
        return f"memory://{key}?expires_in={seconds}"


@dataclass
class StoreStats:
    commits: int = 0
    reads: int = 0
    messages_loaded: int = 0  # messages decoded by load_messages


class MemoryStore:
    def __init__(self, blobs: MemoryBlobs | None = None):
        self.blobs = blobs or MemoryBlobs()
        self.items: dict[tuple[str, str], it.Item] = {}
        self._latest: dict[str, str] = {}  # a run's partition → its newest record's key
        self.stats = StoreStats()
        self._lock = threading.Lock()

    def commit(self, commit: Commit) -> None:
        items = it.commit_items(commit, self.blobs)
        key = (items.record["pk"], items.record["sk"])
        with self._lock:
            if key in self.items:
                raise StateConflict(f"run {commit.head.run_id} changed under us")
            written = [items.record, *items.upserts]
            index = items.index
            if index is not None:
                current = self.items.get((index["pk"], index["sk"]))
                if current is None or current["hv"] <= index["hv"]:
                    written.append(index)
            for item in written:
                self.items[(item["pk"], item["sk"])] = item
            self._latest[key[0]] = max(self._latest.get(key[0], ""), key[1])
            self.stats.commits += 1

    def load_head(self, run_id: str) -> RunHead:
        self.stats.reads += 1
        pk, _ = it.head_key(run_id)
        with self._lock:
            sk = self._latest.get(pk)
            item = self.items.get((pk, sk)) if sk is not None else None
        if item is None:
            raise RunNotFound(f"no run {run_id!r}")
        return records.decode_head(item)

    def _query(self, pk: str, prefix: str) -> Iterator[it.Item]:
        self.stats.reads += 1
        with self._lock:
            keys = sorted(k for k in self.items if k[0] == pk and k[1].startswith(prefix))
            found = [self.items[k] for k in keys]
        yield from found

    def _records(self, run_id: str, below: str = records.PREFIX + "~") -> Iterator[it.Item]:
        pk, _ = it.head_key(run_id)
        return (i for i in reversed(list(self._query(pk, records.PREFIX))) if i["sk"] <= below)

    def load_run(self, run_id: str) -> tuple[RunHead, list[Message]]:
        head = self.load_head(run_id)
        return head, self.load_messages(head)

    def load_messages(self, head: RunHead, start: int = 0) -> list[Message]:
        if start >= head.msg_seq:
            return []
        newest = self._records(head.run_id, records.head_bound(head))
        found = records.messages_from(newest, head, start, self.blobs)
        self.stats.messages_loaded += len(found)
        return found

    def session_history(self, head: RunHead, limit: int) -> list[Message]:
        pk, own = it.marker_key(head)
        earlier = [i for i in self._query(pk, "R#") if i["sk"] <= own]
        return records.history_from(
            reversed(earlier), own, lambda run, _: self._records(run), limit, self.blobs
        )

    def latest_session_run(self, agent: str, session_id: str) -> str | None:
        markers = reversed(list(self._query(it.session_pk(agent, session_id), "R#")))
        return next(it.marker_run_ids(markers), None)

    def session_runs(self, agent: str, session_id: str) -> list[str]:
        return list(it.marker_run_ids(self._query(it.session_pk(agent, session_id), "R#")))

    def delete_session(self, agent: str, session_id: str) -> list[str]:
        pk = it.session_pk(agent, session_id)
        runs = self.session_runs(agent, session_id)
        with self._lock:
            partitions = {pk, *(it.head_key(r)[0] for r in runs)}
            for key in [k for k in self.items if k[0] in partitions]:
                del self.items[key]
            for partition in partitions:
                self._latest.pop(partition, None)
        for prefix in it.session_blob_prefixes(agent, session_id, runs):
            self.blobs.delete_prefix(prefix)
        return runs

    def list_events(self, run_id: str, after: int = -1, limit: int = 100) -> list[Event]:
        first = records.record_sk(after + 1, 0)[: len(records.PREFIX) + 8]
        before = next(self._records(run_id, first), None) if after >= 0 else None
        pk, _ = it.head_key(run_id)
        following = (i for i in self._query(pk, records.PREFIX) if i["sk"] >= first)
        return records.events_from(before, following, after, limit, self.blobs)

    def session_state(self, agent: str, session_id: str) -> SessionState:
        return it.decode_session_state(self.items.get(it.session_state_key(agent, session_id)))

    def save_workflow_run(self, run: Any, expected_version: int | None) -> None:
        """Write a workflow run's item: new (`expected_version` None) or over that version."""
        item = it.workflow_item(run)
        key = (item["pk"], item["sk"])
        with self._lock:
            current = self.items.get(key)
            if (current is None) != (expected_version is None) or (
                current is not None and current["version"] != expected_version
            ):
                raise StateConflict(f"workflow run {run.workflow_run_id} changed under us")
            self.items[key] = item

    def load_workflow_run(self, workflow_run_id: str) -> str:
        """The workflow run's stored JSON (runtime.workflows.records.WorkflowRun)."""
        item = self.items.get(it.workflow_key(workflow_run_id))
        if item is None:
            raise RunNotFound(f"no workflow run {workflow_run_id!r}")
        return str(item["doc"])

    def due_runs(self, now: float, limit: int = 500) -> list[str]:
        due = it.sweep_at(now)
        with self._lock:
            heads = [i for i in self.items.values() if i["sk"] == "HEAD" and "sweep_at" in i]
        found = sorted((i["sweep_at"], i["pk"]) for i in heads if i["sweep_at"] <= due)
        return [pk.removeprefix("RUN#") for _, pk in found[:limit]]
